"""The ``ppclust`` command: version, methods table, one-line errors, no partial outputs."""

from __future__ import annotations

import numpy as np
import pytest

from ppclust import __version__, cli
from ppclust.cli import main


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_methods_lists_every_registered_method(capsys):
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    for name in ("tvclust", "rdpmeans", "cecib", "c3l", "ccib", "smic", "ssgmm", "dpmeans"):
        assert name in out


@pytest.mark.parametrize(
    "content, message",
    [("1,2\n3,nan\n", "non-finite value at row 1"), ("a,b\n", "at least 2 rows"),
     ("1,2\n3\n", "cannot read")],
)
def test_fit_bad_data_is_one_line_error_and_no_output(tmp_path, capsys, content, message):
    data = tmp_path / "x.csv"
    data.write_text(content)
    out = tmp_path / "out"
    assert main(["fit", "--method", "dpmeans", str(data), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("ppclust: error:")
    assert message in err or "not available" in err
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".ppclust-")]


def test_fit_unknown_method_and_bad_links(tmp_path, capsys):
    data = tmp_path / "x.csv"
    np.savetxt(data, np.random.default_rng(0).normal(size=(10, 2)), delimiter=",")
    assert main(["fit", "--method", "nope", str(data), "--out", str(tmp_path / "o")]) == 2
    assert "unknown method" in capsys.readouterr().err
    links = tmp_path / "l.csv"
    links.write_text("0,1,1\n2,99,-1\n")
    from ppclust.cli import CLIError, read_links

    with pytest.raises(CLIError, match="out of range"):
        read_links(str(links), 10)
    links.write_text("0,1,2\n")
    with pytest.raises(CLIError, match="sign"):
        read_links(str(links), 10)


def test_reproduce_unknown_paper_is_one_line_error(capsys):
    assert cli.main(["reproduce", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rdpmeans" in err[0]


def test_reproduce_table_covers_registered_methods():
    from ppclust._registry import METHODS

    assert set(METHODS) - {"dpmeans"} <= set(cli.REPRODUCTIONS)
