from conftest import CellError, TestKernel


def test_kernel_runs_and_reports_errors(kernel: TestKernel) -> None:
    kernel.run("x = 41 + 1")
    assert kernel.eval("x") == "42"
    try:
        kernel.run("undefined_name_xyz")
    except CellError as err:
        assert err.ename == "NameError"
    else:
        raise AssertionError("a NameError was expected")
