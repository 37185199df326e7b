"""The emulator runs NumPy's BLAS single-threaded and gives the caller its threads back."""

import pytest

from spyrec.runtime.blas import _openblas_threads, single_threaded_blas


def test_blas_threads_are_one_inside_and_restored_after() -> None:
    threads = _openblas_threads()
    if threads is None:
        pytest.skip("NumPy is not linked against OpenBLAS here")
    get, set_ = threads
    before = get()
    set_(2)
    try:
        with single_threaded_blas():
            assert get() == 1
        assert get() == 2
    finally:
        set_(before)
