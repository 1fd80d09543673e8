from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.inference.spy.conftest import spy_files, spy_set  # noqa: F401
