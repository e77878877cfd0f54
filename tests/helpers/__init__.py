"""What the tests share, one module per job: test modules import from here, never from each
other or from conftest (tests/test_test_imports.py checks it)."""
