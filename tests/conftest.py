import atexit
import os
import pathlib
import shutil
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Tests read public reference data from a local folder and never download it
# (tests/test_data_download.py serves it over a local HTTP server and turns
# offline mode off for its own tests).
os.environ.setdefault("RMLIB_DATA_DIR", str(ROOT.parent / "shared" / "data"))
os.environ.setdefault("RMLIB_OFFLINE", "1")
# Score tables the tests write go to a folder of this test session (subprocesses inherit it), not the
# checkout's data/scores, where the book's own tables live.
if "RMLIB_SCORES_DIR" not in os.environ:
    os.environ["RMLIB_SCORES_DIR"] = tempfile.mkdtemp(prefix="rmlib-test-scores-")
    atexit.register(shutil.rmtree, os.environ["RMLIB_SCORES_DIR"], True)
