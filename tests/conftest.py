import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Tests read public reference data from a local folder and never download it
# (tests/test_data_download.py serves it over a local HTTP server and turns
# offline mode off for its own tests).
os.environ.setdefault("RMLIB_DATA_DIR", str(ROOT.parent / "shared" / "data"))
os.environ.setdefault("RMLIB_OFFLINE", "1")
