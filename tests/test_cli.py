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
    for name in ("tvclust", "rdpmeans", "cecib", "c3l", "ccib", "smic", "ssgmm", "bayesian-ssgmm", "dpmeans"):
        assert name in out


@pytest.mark.parametrize(
    "content, message",
    [
        ("1,2\n3,nan\n", "non-finite value at row 1"),
        ("a,b\n", "at least 2 rows"),
        ("1,2\n3\n", "cannot read"),
    ],
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


# ---------------------------------------------------------------------------------------------
# input files never lose a row silently


@pytest.mark.parametrize(
    "text, header, rows, names",
    [
        ("x,y\n1,2\n3,4\n", None, 2, ["x", "y"]),  # every value non-numeric: a header
        ('"x";"y"\n1;2\n3;4\n', None, 2, ["x", "y"]),
        ("1,2\n3,4\n", None, 2, None),
        ("# made by hand\n\n1 2\n3 4\n", None, 2, None),  # comment and blank lines are not rows
        ("1,2\n3,4\n", True, 1, ["1", "2"]),  # --header: the first line is a header whatever it holds
        ("x,y\n1,2\n", False, None, None),
    ],  # --no-header: 'x' is then a bad value, not a dropped row
)
def test_read_table_header_rules(tmp_path, text, header, rows, names):
    f = tmp_path / "t.csv"
    f.write_text(text)
    if rows is None:
        with pytest.raises(cli.CLIError, match=r"non-numeric value 'x' at row 0, column 0.*--no-header"):
            cli.read_table(str(f), "data", header)
        return
    t = cli.read_table(str(f), "data", header)
    assert t.values.shape == (rows, 2) and t.header == names


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "NA,1.0\n1,2\n3,4\n",
            r"non-numeric value 'NA' at row 0, column 0 \(0-based; line 1 of the file\); "
            r"the first line is data because some of its values are numbers \(pass --header",
        ),
        ("x,1.0\n1,2\n", r"'x' at row 0, column 0"),  # one stray token: data, not a header
        ("a,b\n1,2\n3,?\n", r"non-numeric value '\?' at row 1, column 1 \(0-based; line 3 of the file\)"),
        ("1,2\n3,4,5\n", r"row 1 \(line 2\) has 3 column\(s\), the first row has 2"),
        ("1,2\n3,inf\n4,5\n", r"non-finite value at row 1, column 1 \(0-based; line 2 of the file\): inf"),
    ],
)
def test_read_data_names_row_column_and_value(tmp_path, text, message):
    f = tmp_path / "d.csv"
    f.write_text(text)
    with pytest.raises(cli.CLIError, match=message):
        cli.read_data(str(f))


def test_side_files_follow_the_same_rules(tmp_path):
    lab = tmp_path / "y.csv"
    lab.write_text("label\n0\n-1\n1\n")
    np.testing.assert_array_equal(cli.read_labels(str(lab), 3), [0, -1, 1])
    lab.write_text("NA\n0\n-1\n1\n")  # one column: 'NA' alone reads as a header, and the count says so
    with pytest.raises(
        cli.CLIError,
        match=r"3 entries but the data has 4 rows \(its first line 'NA' "
        r"was read as a header; pass --no-header",
    ):
        cli.read_labels(str(lab), 4)
    with pytest.raises(cli.CLIError, match=r"non-numeric value 'NA' at row 0"):
        cli.read_labels(str(lab), 4, header=False)
    lab.write_text("0\n1.5\n")
    with pytest.raises(cli.CLIError, match=r"must hold integers; got 1.5 at row 1, column 0"):
        cli.read_labels(str(lab), 2)
    links = tmp_path / "l.csv"
    links.write_text("i,j,sign\n0,1,1\n1,2,-1\n")
    ml, cl = cli.read_links(str(links), 3)
    np.testing.assert_array_equal(ml, [[0, 1]])
    np.testing.assert_array_equal(cl, [[1, 2]])
    links.write_text("0,NA,1\n1,2,-1\n")
    with pytest.raises(cli.CLIError, match=r"links file .*'NA' at row 0, column 1"):
        cli.read_links(str(links), 3)
    bg = tmp_path / "b.csv"
    bg.write_text("group\n0\n1\n")
    with pytest.raises(cli.CLIError, match=r"2 rows, the data has 3 \(its first line 'group'"):
        cli.read_background(str(bg), 3)
    npy = tmp_path / "x.npy"
    np.save(npy, np.arange(6.0).reshape(3, 2))
    assert cli.read_data(str(npy)).values.shape == (3, 2)


def test_fit_reports_rows_read_and_stdin(tmp_path, capsys, monkeypatch):
    import io
    import json

    text = "NA,1\n" + "\n".join(f"{v},{v}" for v in (0, 0.1, 9, 9.1)) + "\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    out = tmp_path / "out"
    argv = ["fit", "-", "--method", "dpmeans", "--param", "lam=20", "--out", str(out), "--no-plots"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "<stdin>: non-numeric value 'NA' at row 0, column 0" in err[0]
    monkeypatch.setattr("sys.stdin", io.StringIO(text.replace("NA,1\n", "")))
    assert main(argv) == 0
    assert "read 4 rows x 2 columns from <stdin> (no header)" in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_rows_read"] == 4 and summary["inputs"]["data"] == {
        "path": "<stdin>",
        "n_rows_read": 4,
        "header": None,
    }
    assert np.loadtxt(out / "labels.csv", skiprows=1).shape == (4,)
    assert main(["fit", "-", "--labels", "-", "--method", "dpmeans", "--out", str(tmp_path / "o2")]) == 2
    assert "only one input file can be read from stdin" in capsys.readouterr().err


def test_merge_numba_cache_moves_whole_new_kernels_and_keeps_existing_ones(tmp_path):
    """``ppclust warmup --jobs``'s merge: a kernel (its index and every data file) missing from the target
    is copied whole; a kernel the target indexes already keeps its own index and data."""
    from ppclust._warmup import merge_numba_cache

    src, dst = tmp_path / "job", tmp_path / "cache"
    (src / "sub").mkdir(parents=True)
    (dst / "sub").mkdir(parents=True)
    (src / "sub" / "m.new-3.py312.nbi").write_bytes(b"new index")
    (src / "sub" / "m.new-3.py312.1.nbc").write_bytes(b"sig 1")
    (src / "sub" / "m.new-3.py312.2.nbc").write_bytes(b"sig 2")
    (src / "sub" / "m.old-9.py312.nbi").write_bytes(b"job's index")
    (src / "sub" / "m.old-9.py312.1.nbc").write_bytes(b"job's code")
    (dst / "sub" / "m.old-9.py312.nbi").write_bytes(b"kept index")
    (dst / "sub" / "m.old-9.py312.1.nbc").write_bytes(b"kept code")
    assert merge_numba_cache(src, dst) == 1
    got = {p.name: p.read_bytes() for p in (dst / "sub").iterdir()}
    assert got == {
        "m.new-3.py312.nbi": b"new index",
        "m.new-3.py312.1.nbc": b"sig 1",
        "m.new-3.py312.2.nbc": b"sig 2",
        "m.old-9.py312.nbi": b"kept index",
        "m.old-9.py312.1.nbc": b"kept code",
    }
    assert merge_numba_cache(src, dst) == 0  # nothing new the second time


def test_warmup_refuses_unknown_fits_and_bad_job_counts():
    from ppclust._warmup import warmup
    from ppclust.families._numba import available

    if not available():
        pytest.skip("numba is not installed: warmup does nothing")
    with pytest.raises(ValueError, match="unknown warm-up fits"):
        warmup(groups=[["KMeans"]])
    with pytest.raises(ValueError, match="jobs must be a positive integer"):
        warmup(jobs=0)
