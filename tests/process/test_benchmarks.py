"""benchmarks/whole_process.py runs end to end on tiny inputs and fills a
README's table (its figures are not checked: benchmarks measure, tests don't)."""

from __future__ import annotations

import pytest
from conftest import load_benchmark


@pytest.fixture(scope="module")
def whole_process():
    return load_benchmark("whole_process")


def test_script_fills_the_readme_table(whole_process, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    readme = tmp_path / "README.md"
    readme.write_text("before\n<!-- bench-table -->\nold\n<!-- /bench-table -->\nafter\n")
    argv = ["--sizes", "4K", "--rounds", "1", "--many", "2", "--kernel-sizes", "64K",
            "--tmp", str(tmp_path), "--update-readme", str(readme)]
    assert whole_process.main(argv) == 0
    text = readme.read_text()
    assert text.startswith("before\n<!-- bench-table -->\nMeasured ") and text.endswith("<!-- /bench-table -->\nafter\n")
    assert "old" not in text
    for row in ("`onnxop --help`", "flatten 4 KiB .npy, whole process", "flatten 2 files of 4 KiB",
                "vs `copy_buffer_to_buffer`, 64 KiB"):
        assert row in text, row
    assert "Command: `python benchmarks/whole_process.py --sizes 4K" in text
    assert ", driver " in text  # driver name and version, from onnxop info
    assert "CPU seconds other processes took, per round: flatten 4 KiB: " in text
    assert "; bench 64 KiB: " in text
    assert list(tmp_path.glob("onnxop-bench-*")) == []  # temp files cleaned up


def test_dawn_column(whole_process, tmp_path, monkeypatch):
    """onnxop on Dawn runs in the same rounds as on wgpu and fills its column
    (flatten, many files, the kernel row); the ratio column compares them."""
    pytest.importorskip("pydawn")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    out = tmp_path / "table.md"
    argv = ["--sizes", "4K", "--rounds", "1", "--many", "2", "--kernel-sizes", "64K", "--backend", "vulkan",
            "--tools", "onnxop,onnxop on Dawn,numpy only", "--tmp", str(tmp_path), "--out", str(out)]
    assert whole_process.main(argv) == 0
    lines = out.read_text().splitlines()
    header = next(line for line in lines if line.startswith("| what"))
    cols = [c.strip() for c in header.strip("|").split("|")]
    assert cols[1:3] == ["onnxop", "onnxop on Dawn"] and "Dawn vs wgpu" in cols

    def row(start: str) -> dict[str, str]:
        cells = next(line for line in lines if line.startswith(f"| {start}")).strip("|").split("|")
        assert len(cells) == len(cols), start
        return dict(zip(cols, (c.strip() for c in cells)))

    flat = row("flatten 4 KiB .npy")
    assert flat["onnxop on Dawn"].endswith(" s") and flat["Dawn vs wgpu"].endswith("x")
    assert flat["onnxruntime CPU"] == "not run"  # left out by --tools, not missing
    assert "(1 file: " in row("flatten 2 files")["onnxop on Dawn"]
    kernel = row("kernel vs `copy_buffer_to_buffer`, 64 KiB")
    assert "GB/s" in kernel["onnxop"] and "GB/s" in kernel["onnxop on Dawn"]
    assert "; Dawn: " in lines[0] and "dawn" in lines[0].split("; Dawn: ")[1]  # its adapter and driver


def test_marker_picks_the_table(whole_process, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("<!-- t1 -->\na\n<!-- /t1 -->\n<!-- t2 -->\nb\n<!-- /t2 -->\n")
    whole_process.update_readme(readme, "new\n", "t2")
    assert readme.read_text() == "<!-- t1 -->\na\n<!-- /t1 -->\n<!-- t2 -->\nnew\n<!-- /t2 -->\n"


def test_same_data_compares_tensor_bytes_not_headers(whole_process, tmp_path):
    import numpy as np

    a = np.arange(64, dtype=np.float32)
    np.save(tmp_path / "a.npy", a.reshape(4, 16))
    np.save(tmp_path / "b.npy", a.reshape(64))
    assert whole_process.same_data(tmp_path / "a.npy", tmp_path / "b.npy")
    a[5] = -0.0
    np.save(tmp_path / "c.npy", a)
    assert not whole_process.same_data(tmp_path / "a.npy", tmp_path / "c.npy")


def test_copy_variants_checks_each_layout(tmp_path, capsys, monkeypatch):
    """benchmarks/copy_variants.py: each variant is a real rewrite of the
    shipped shader (not the same text under another name), and every one's
    output is verified byte for byte before it is timed."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    module = load_benchmark("copy_variants")
    from onnxop_cli.gpu import get_gpu
    from onnxop_cli.gpu.kernels import available

    gpu = get_gpu("vulkan")
    texts = module.variants(gpu)
    for kernel in available(gpu):
        shipped = texts[f"{kernel.name} shipped"]
        assert "lid % RUN" in shipped and "lid % RUN" not in texts[f"{kernel.name} strided"]
        if kernel.word == 32:
            assert "zero" in texts[f"{kernel.name} prefetch"] and "zero" not in shipped
    assert module.main(["--backend", "vulkan", "--sizes", "64K", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    for name in texts:
        assert f"  {name} " in out, name


def test_chunk_sizes_runs_each_chunk_and_checks_the_output(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    module = load_benchmark("chunk_sizes")
    assert module.main(["--mib", "1", "--chunks", "1,2", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "identical to the input: True" in out
    assert "chunk   1 MiB: median" in out and "chunk   2 MiB: median" in out


def test_variant_kernels_switches_and_probes_name_real_code():
    """benchmarks/variant_kernels.py: every variant's switch and probe names
    a function or setting src/ has (a renamed one fails here, not an hour
    into a measurement), and the probe is put back."""
    module = load_benchmark("variant_kernels")
    for v in module.variants():
        with v.off():
            pass
        probe = v.probe()
        setattr(probe.module, probe.attr, probe.orig)
        assert getattr(probe.module, probe.attr) is probe.orig, v.name


def test_question_candidates_measures_every_candidate(tmp_path, capsys, monkeypatch):
    """benchmarks/question_candidates.py: one row per candidate of each question asked, with its figures
    over the repeats and how often it was the answer (gather_source: a fact, no kernel to compile)."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    module = load_benchmark("question_candidates")
    assert module.main(["--only", "gather_source", "--repeats", "2"]) == 0
    out = capsys.readouterr().out
    assert "`python benchmarks/question_candidates.py --backend auto --repeats 2 --only gather_source`" in out
    rows = [line for line in out.splitlines() if line.startswith("| gather_source |")]
    assert [r.split(" | ")[1] for r in rows] == ["streamed", "resident"] and all(r.endswith("/2 |") for r in rows)
