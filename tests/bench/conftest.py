import pytest
from bench_factory import write_bench


@pytest.fixture
def make_bench(tmp_path):
    def _make(rows, **kwargs):
        return write_bench(tmp_path / "bench", rows, **kwargs)

    return _make
