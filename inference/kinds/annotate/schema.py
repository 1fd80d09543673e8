"""What the two annotate answers must be (re-exported from `inference.schemas`, where the other users find them)."""
from ...schemas import Stage1Answer, Stage2Answer, stage1_choices, stage1_json_schema, stage2_json_schema  # noqa: F401
