import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Tests read public reference data from a local folder (no network here).
os.environ.setdefault("RMLIB_DATA_DIR", str(ROOT.parent / "shared" / "data"))
