"""What a judge answer must be (re-exported from `inference.schemas`, where the other users find it)."""
from ...schemas import JudgeAnswer, judge_json_schema  # noqa: F401
