"""pytest set-up for the Python package's tests."""


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: the slowest tests here (a pip install); deselect with -m 'not slow'")
