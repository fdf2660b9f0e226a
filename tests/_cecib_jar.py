"""The CEC-IB golden comparisons against the authors' jar (``reference/cecib`` of the shared folder):
the cost of every partition the jar saved and the exact replay of its fixed-centre runs, returned as
numbers. ``tests/inference/test_cecib.py`` asserts them; ``reproduce/cecib_golden.py`` writes them."""

from __future__ import annotations

import numpy as np

DATASETS = ["iris", "wine", "segmentation", "user", "vertebral"]


def _load(ref, name):
    x = np.loadtxt(ref / "data" / f"{name}.data.txt", skiprows=1)
    c = np.loadtxt(ref / "data" / f"{name}.class.txt", skiprows=1).astype(int)
    return x, np.where(c == 0, -1, c)


def blobs(seed=0, n_per=200):
    """Three separated 2-d Gaussian blobs, 10 % of the points labelled."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0], [8, 0], [0, 8]], float)
    x = np.concatenate([c + rng.normal(size=(n_per, 2)) for c in centres])
    truth = np.repeat(np.arange(3), n_per)
    y = np.where(rng.random(len(x)) < 0.1, truth, -1)
    return x, y, truth


def golden_costs(ref) -> dict:
    import pandas as pd

    from ppclust.inference import cecib

    runs = pd.read_csv(ref / "runs.csv")
    terms = pd.read_csv(ref / "cluster_terms.csv")
    data = {name: _load(ref, name) for name in DATASETS}
    out = {
        d: {
            "rows": 0,
            "total_abs": 0.0,
            "total_rel": 0.0,
            "parts_abs": 0.0,
            "terms_full_abs": 0.0,
            "terms_6dp_abs": 0.0,
            "sizes_equal": True,
        }
        for d in DATASETS
    }
    modes = {}
    for _, r in runs.iterrows():
        if r.degenerate:
            continue
        x, y = data[r.dataset]
        z = np.loadtxt(ref / r.partition_file).astype(int)
        p = cecib.cecib_cost(x, z, y, r.beta)
        o = out[r.dataset]
        o["rows"] += 1
        modes[r["mode"]] = modes.get(r["mode"], 0) + 1
        o["total_abs"] = max(o["total_abs"], abs(p.total - r.energy_jar))
        o["total_rel"] = max(o["total_rel"], abs(p.total - r.energy_jar) / abs(r.energy_jar))
        for ours, col in [
            (p.model_complexity, "H_Y"),
            (p.accuracy, "sum_p_HN"),
            (p.side_information / r.beta if r.beta else None, "sum_p_HZ"),
        ]:
            if ours is not None:
                o["parts_abs"] = max(o["parts_abs"], abs(ours - r[col]))
        uniq = np.unique(z)
        for _, t in terms[terms.run_id == r.run_id].iterrows():
            k = int(np.searchsorted(uniq, t.label))
            o["sizes_equal"] &= bool(p.sizes[k] == t["size"])
            diff = float(np.max(np.abs(np.asarray(p.cluster_terms[k]) - [t.H_Yi, t.H_Yi_fi, t.H_Z_Yi])))
            key = "terms_6dp_abs" if t.precision == "printed_6dp" else "terms_full_abs"
            o[key] = max(o[key], diff)
    return {"per_dataset": out, "modes": modes, "rows": sum(o["rows"] for o in out.values())}


def replays(ref, datasets=DATASETS) -> dict:
    import jax
    import jax.numpy as jnp
    import pandas as pd
    from sklearn.metrics import adjusted_rand_score

    from ppclust.inference import cecib

    runs = pd.read_csv(ref / "runs.csv")
    traces = pd.read_csv(ref / "energy_traces.csv")
    runs = runs[(runs["mode"] == "fixed_centres") & runs.dataset.isin(datasets)]
    out = {
        d: {
            "runs": 0,
            "same_partition": 0,
            "same_passes": 0,
            "same_clusters": 0,
            "same_cluster_trace": 0,
            "energy_abs": 0.0,
            "energy_rel": 0.0,
        }
        for d in datasets
    }
    with jax.enable_x64(True):
        for _, r in runs.iterrows():
            x, y = _load(ref, r.dataset)
            yc, m = cecib.encode_labels(y, len(y))
            centres = [int(v) for v in r.init_centres.split(";")]
            res = cecib.replay(jnp.asarray(x), yc, m, centres, beta=r.beta, min_cluster_fraction=r.eps)
            z = np.loadtxt(ref / r.partition_file).astype(int)
            tr = traces[traces.run_id == r.run_id].sort_values("pass")
            ours = np.asarray(res.trace)[: len(tr)]
            o = out[r.dataset]
            o["runs"] += 1
            o["same_partition"] += int(adjusted_rand_score(z, np.asarray(res.labels)) == 1.0)
            o["same_passes"] += int(int(res.n_passes) == r.passes)
            o["same_clusters"] += int(int(res.active.sum()) == r.n_clusters)
            o["same_cluster_trace"] += int(
                np.array_equal(np.asarray(res.n_clusters_trace)[: len(tr)], tr.n_clusters.values)
            )
            d = np.abs(ours - tr.energy.values)
            o["energy_abs"] = max(o["energy_abs"], float(d.max()))
            o["energy_rel"] = max(o["energy_rel"], float((d / np.abs(tr.energy.values)).max()))
    return out
