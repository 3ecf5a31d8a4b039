"""``onnxop conformance --runtime ort-web`` and ``--runtime ort-web-jsep``:
onnxruntime-web's WebGPU provider (its C++ build, ort.webgpu.mjs, and its
JavaScript kernels, ort.mjs) in headless Chromium on SwiftShader, in real
processes. The corpus (``onnxop cases write``) and onnx's official cases of the
data-movement operators are held, case by case, to the outcomes
onnxruntime-web 1.31.1 gives today (so a change in what it returns shows
up); a browser that does not answer in time is each case's error, never a
hung command, and never the refusal an error case asks for; no package and no
Chromium are one line each.

The runtimes' tests run in .ci/run's browser pass (ONNXOP_TEST_BACKENDS=
browser-vulkan, ONNXOP_ORT_WEB set by its npm install); without Chromium or
onnxruntime-web they skip on a developer machine and FAIL when ``CI`` is set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from commands import run_commands
from conftest import BACKENDS
from onnxop_cli.gpu.engines import installed

RUNTIMES = ("ort-web", "ort-web-jsep")
VERSION = "1.31.1"
# onnx's official cases of these operators run beside the corpus
DATA_MOVEMENT = ("Concat DepthToSpace Expand Flatten Gather GatherElements GatherND Pad Reshape ScatterElements "
                 "ScatterND Slice SpaceToDepth Split Squeeze Tile Transpose Unsqueeze").split()


def onnxop(*args, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onnxop_cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def package() -> Path:
    """The onnxruntime-web folder ($ONNXOP_ORT_WEB); the runtimes' tests skip without it and
    Chromium (they run in the browser pass), and fail in CI."""
    if not any(b.startswith("browser-") for b in BACKENDS):
        pytest.skip("the ort-web runtimes' tests run with ONNXOP_TEST_BACKENDS=browser-vulkan (the browser pass)")
    folder = os.environ.get("ONNXOP_ORT_WEB", "")
    lacking = ("" if installed("browser") else "Playwright or Chromium") or (
        "" if folder and list(Path(folder).glob("**/onnxruntime-web/dist/ort.webgpu.mjs")) + list(
            Path(folder).glob("dist/ort.webgpu.mjs")) else f"onnxruntime-web ($ONNXOP_ORT_WEB is {folder!r})")
    if lacking:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and {lacking} is missing (.ci/run installs both: npm install --prefix DIR "
                        f"onnxruntime-web@{VERSION}, ONNXOP_ORT_WEB=DIR)", pytrace=False)
        pytest.skip(f"the ort-web runtimes need {lacking}")
    return Path(folder)


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> list[Path]:
    """The corpus and the official cases of the data-movement operators."""
    package()
    from onnxop_cli.docs.nodetests import write_all

    top = tmp_path_factory.mktemp("cases")
    r, = run_commands([(top, ["cases", "write", top / "edge"])])  # in this process: no browser
    assert r.returncode == 0, r.stderr
    write_all(top / "official", DATA_MOVEMENT)
    return [top / "edge", top / "official"]


def table(by_outcome: dict[str, str]) -> dict[str, str]:
    """case -> outcome, from outcome -> the cases' names (whitespace-separated)."""
    return {case: outcome for outcome, names in by_outcome.items() for case in names.split()}


# What onnxruntime-web 1.31.1 gives today in Chromium 156 on SwiftShader (no
# shader-f16); every other case passes (docs/runtimes.md explains them). The
# C++ provider (ort-web): every index past the edge returns data (zeros, or
# what its low 32 bits pick); float16 is refused without shader-f16, and Split
# past 10 storage buffers; float64, bool, int8, uint8 and 4-bit data, ranks
# 5 to 8 with mixed axes and the opset-25 operators run on the CPU provider.
# The JavaScript kernels (ort-web-jsep): float16 without shader-f16, Split into
# 9 or more outputs and Pad wrap come back as zeros; zero-size tensors are
# refused; ScatterElements, Reshape and Unsqueeze run on the CPU provider too.
# What both builds give: data for every index past an edge (ScatterElements' aside), the
# same CPU fallbacks, the same types without a tensor.
BOTH_NO_ERROR = """
        gather_axis1_index_d gather_axis1_index_minus_d_minus_1 gather_elements_axis1_index_d
        gather_elements_axis1_index_minus_d_minus_1 gather_elements_int32_index_d
        gather_elements_int32_index_int32_max gather_elements_int32_index_int32_min
        gather_elements_int32_index_minus_d_minus_1 gather_elements_int64_index_2pow31
        gather_elements_int64_index_2pow32 gather_elements_int64_index_2pow32_plus_1
        gather_elements_int64_index_d gather_elements_int64_index_int64_max
        gather_elements_int64_index_int64_min gather_elements_int64_index_minus_d_minus_1 gather_int32_index_d
        gather_int32_index_int32_max gather_int32_index_int32_min gather_int32_index_minus_d_minus_1
        gather_int64_index_2pow31 gather_int64_index_2pow32 gather_int64_index_2pow32_plus_1
        gather_int64_index_d gather_int64_index_int64_max gather_int64_index_int64_min
        gather_int64_index_minus_d_minus_1 gather_nd_int64_index_2pow31 gather_nd_int64_index_2pow32
        gather_nd_int64_index_2pow32_plus_1 gather_nd_int64_index_d gather_nd_int64_index_int64_max
        gather_nd_int64_index_int64_min gather_nd_int64_index_minus_d_minus_1 scatter_nd_int64_index_2pow31
        scatter_nd_int64_index_2pow32 scatter_nd_int64_index_2pow32_plus_1 scatter_nd_int64_index_d
        scatter_nd_int64_index_int64_max scatter_nd_int64_index_int64_min
        scatter_nd_int64_index_minus_d_minus_1
"""

BOTH_NOT_ON_WEBGPU = """
        concat_bool_3_and_4 concat_float64_bits concat_int64_above_2pow32 concat_int8_3_and_4
        concat_uint8_3_and_4 gather_float64_bits gather_int64_above_2pow32 gather_int8_7_of_13
        one_hot_int64_index_2pow31 one_hot_int64_index_2pow32 one_hot_int64_index_2pow32_plus_1
        one_hot_int64_index_d one_hot_int64_index_d_minus_1 one_hot_int64_index_int64_max
        one_hot_int64_index_int64_min one_hot_int64_index_minus_d one_hot_int64_index_minus_d_minus_1
        slice_bool_odd_step slice_int8_odd_step slice_uint8_odd_step test_constant_pad test_constant_pad_axes
        test_constant_pad_negative_axes test_edge_pad test_flatten_axis0 test_flatten_axis1 test_flatten_axis2
        test_flatten_axis3 test_flatten_default_axis test_flatten_negative_axis1 test_flatten_negative_axis2
        test_flatten_negative_axis3 test_flatten_negative_axis4 test_reflect_pad test_squeeze
        test_squeeze_negative_axes test_transpose_all_permutations_0 test_transpose_all_permutations_1
        test_transpose_all_permutations_2 test_transpose_all_permutations_3 test_transpose_all_permutations_4
        test_transpose_all_permutations_5 test_transpose_default test_wrap_pad transpose_bool_3x5
        transpose_float64_bits transpose_int4_3x5 transpose_int64_above_2pow32 transpose_int8_3x5
        transpose_rank5_mixed transpose_rank6_mixed transpose_rank7_mixed transpose_rank8_mixed
        transpose_uint4_3x5 transpose_uint8_3x5
"""

BOTH_SKIPPED = """
        concat_bfloat16_bits gather_bfloat16_bits one_hot_int32_index_d one_hot_int32_index_d_minus_1
        one_hot_int32_index_int32_max one_hot_int32_index_int32_min one_hot_int32_index_minus_d
        one_hot_int32_index_minus_d_minus_1 pad_bfloat16_edge_bits pad_bfloat16_value_nan_payload
        pad_bfloat16_value_negative_zero pad_float4_e2m1fn_edge_bits pad_float8_e4m3fn_edge_bits
        pad_float8_e4m3fnuz_edge_bits pad_float8_e5m2_edge_bits pad_float8_e5m2fnuz_edge_bits
        pad_float8_e8m0fnu_edge_bits test_depthtospace_crd_mode_example test_depthtospace_example
        test_spacetodepth test_spacetodepth_crd_mode_example test_spacetodepth_dcr_mode_example
        test_spacetodepth_example transpose_bfloat16_bits transpose_float4_e2m1fn_bits
        transpose_float8_e4m3fn_bits transpose_float8_e4m3fnuz_bits transpose_float8_e5m2_bits
        transpose_float8_e5m2fnuz_bits transpose_float8_e8m0fnu_bits transpose_int2_3x5 transpose_uint2_3x5
        where_bfloat16_bits
"""
NATIVE = table({
    "no_error": BOTH_NO_ERROR + """
        scatter_elements_axis1_index_d scatter_elements_axis1_index_minus_d_minus_1
        scatter_elements_int32_index_d scatter_elements_int32_index_int32_max
        scatter_elements_int32_index_int32_min scatter_elements_int32_index_minus_d_minus_1
        scatter_elements_int64_index_2pow31 scatter_elements_int64_index_2pow32
        scatter_elements_int64_index_2pow32_plus_1 scatter_elements_int64_index_d
        scatter_elements_int64_index_int64_max scatter_elements_int64_index_int64_min
        scatter_elements_int64_index_minus_d_minus_1
    """,
    "error": """
        concat_float16_bits gather_float16_bits pad_float16_edge_bits pad_float16_value_nan_payload
        pad_float16_value_negative_zero split_100_outputs split_17_outputs split_33_outputs
        transpose_float16_bits where_float16_bits
    """,
    "not_on_webgpu": BOTH_NOT_ON_WEBGPU,
    "skipped": BOTH_SKIPPED + """
        pad_float64_edge_bits pad_float64_value_nan_payload pad_float64_value_negative_zero where_float64_bits
    """,
})
JSEP = table({
    "wrong": """
        concat_float16_bits gather_float16_bits pad_float16_edge_bits pad_float16_value_nan_payload
        pad_float16_value_negative_zero pad_wrap_2d_plus_1 pad_wrap_d pad_wrap_d_minus_1 pad_wrap_d_plus_1
        split_100_outputs split_17_outputs split_33_outputs split_9_outputs transpose_float16_bits
        where_float16_bits
    """,
    "no_error": BOTH_NO_ERROR,
    "error": """
        pad_zero_size_input scatter_nd_empty_updates slice_to_zero_size split_zero_size_output
    """,
    "not_on_webgpu": BOTH_NOT_ON_WEBGPU + """
        gather_bool_7_of_13 gather_uint8_7_of_13 pad_float64_edge_bits pad_float64_value_nan_payload
        pad_float64_value_negative_zero scatter_elements_axis1_index_d scatter_elements_axis1_index_d_minus_1
        scatter_elements_axis1_index_minus_d_minus_1 scatter_elements_int32_index_d
        scatter_elements_int32_index_d_minus_1 scatter_elements_int32_index_int32_max
        scatter_elements_int32_index_int32_min scatter_elements_int32_index_minus_d
        scatter_elements_int32_index_minus_d_minus_1 scatter_elements_int64_index_2pow31
        scatter_elements_int64_index_2pow32 scatter_elements_int64_index_2pow32_plus_1
        scatter_elements_int64_index_d scatter_elements_int64_index_d_minus_1
        scatter_elements_int64_index_int64_max scatter_elements_int64_index_int64_min
        scatter_elements_int64_index_minus_d scatter_elements_int64_index_minus_d_minus_1
        test_reshape_allowzero_reordered test_reshape_extended_dims test_reshape_negative_dim
        test_reshape_negative_extended_dims test_reshape_one_dim test_reshape_reduced_dims
        test_reshape_reordered_all_dims test_reshape_reordered_last_dims test_reshape_zero_and_negative_dim
        test_reshape_zero_dim test_scatter_elements_with_axis test_scatter_elements_with_duplicate_indices
        test_scatter_elements_with_negative_indices test_scatter_elements_with_reduction_max
        test_scatter_elements_with_reduction_min test_scatter_elements_with_reduction_mul
        test_scatter_elements_without_axis test_unsqueeze_axis_0 test_unsqueeze_axis_1 test_unsqueeze_axis_2
        test_unsqueeze_negative_axes test_unsqueeze_three_axes test_unsqueeze_two_axes
        test_unsqueeze_unsorted_axes where_float64_bits
    """,
    "skipped": BOTH_SKIPPED,
})


def outcomes(r: subprocess.CompletedProcess) -> tuple[dict, dict[str, dict]]:
    doc = json.loads(r.stdout)
    return doc, {c["case"]: c for c in doc["cases"]}


@pytest.mark.parametrize("runtime, expected", [("ort-web", NATIVE), ("ort-web-jsep", JSEP)])
def test_outcomes_on_the_corpus_and_the_official_cases(cases, runtime, expected):
    r = onnxop("--json", "conformance", *cases, "--runtime", runtime)
    assert r.returncode == 1, r.stderr[-2000:]  # it has no_error and error cases
    doc, got = outcomes(r)
    assert doc["runtime"] == runtime and doc["runtime_about"].startswith(f"onnxruntime-web {VERSION}, ")
    assert len(got) == 201 + 111
    assert {k: c["outcome"] for k, c in got.items() if c["outcome"] != "passed"} == expected
    # what came back where an error is required: index 2^32+1 read as 1 (row 1 of x)
    shown = got["gather_int64_index_2pow32_plus_1"]["detail"]
    assert shown.startswith("test_data_set_0: returned 'y' (2, 3) float32 [-1.3031572 , 0.9053559 , 0.44637457,")
    assert shown.endswith("where the spec requires an error: Gather: index 4294967297 is outside [-5, 4] "
                          "for an axis of size 5")
    provider = "WebGpuExecutionProvider" if runtime == "ort-web" else "JsExecutionProvider"
    assert got["concat_float64_bits"]["detail"] == (
        f"onnxruntime-web placed Concat on CPUExecutionProvider, not on {provider}")


def test_wrong_bytes_and_refusals_are_shown(cases):
    """JSEP's Split into 9 outputs: zeros, with the bytes; the C++ provider's refusal in its own words."""
    r = onnxop("conformance", cases[0] / "split_9_outputs", "--runtime", "ort-web-jsep")
    assert r.returncode == 1
    assert r.stdout.splitlines()[0].startswith(f"runtime: ort-web-jsep (onnxruntime-web {VERSION}, ort.mjs, "
                                               "JsExecutionProvider, Chromium ")
    assert ("wrong: test_data_set_0: 2 of 2 elements differ; first y0[0, 0] = 0., expected -0.31557894 "
            "(bytes 00 00 00 00, expected 90 93 a1 be)") in r.stdout
    assert r.stdout.splitlines()[-1] == "0 passed, 1 failed (1 wrong), 0 skipped"
    r = onnxop("conformance", cases[0] / "split_17_outputs", "--runtime", "ort-web")
    assert ("error: test_data_set_0: failed to call OrtRun(). webgpu/shader_helper.cc:354 numbers_storage_buffers_ "
            "<= limits_.maxStorageBuffersPerShaderStage was false. Too many storage buffers in shader. "
            "Current: 11, Max is 10") in r.stdout


def test_a_browser_that_does_not_answer_is_each_cases_error(cases):
    """Every session's creation past the limit: each case an error (the one that
    requires an error too: a hung browser is no refusal), a fresh browser for
    the next, and the command ends."""
    start = time.monotonic()
    r = onnxop("conformance", cases[0] / "gather_int64_index_d", cases[0] / "tile_zero_repeats",
               "--runtime", "ort-web", env={"ONNXOP_BROWSER_TIMEOUT": "0.01"}, timeout=300)
    assert r.returncode == 1 and r.stderr == ""
    lines = r.stdout.splitlines()
    for case in ("gather_int64_index_d", "tile_zero_repeats"):
        line = next(x for x in lines if x.startswith(case))
        assert line.endswith("error: ort-web: the browser did not answer within 0.01 s while creating a session "
                             "($ONNXOP_BROWSER_TIMEOUT sets the limit)"), line
    assert lines[-1] == "0 passed, 2 failed (2 error), 0 skipped"
    assert time.monotonic() - start < 120


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_no_package_is_one_line_and_exit_1(runtime, tmp_path):
    r = onnxop("conformance", tmp_path, "--runtime", runtime, env={"ONNXOP_ORT_WEB": ""})
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == (f"onnxop: error: --runtime {runtime}: no onnxruntime-web package named (--ort-web DIR or "
                        f"$ONNXOP_ORT_WEB; npm install --prefix DIR onnxruntime-web@{VERSION}, then --ort-web "
                        "DIR/node_modules/onnxruntime-web)\n")
    r = onnxop("conformance", tmp_path, "--runtime", runtime, "--ort-web", tmp_path / "no\npackage")
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith(f"onnxop: error: --runtime {runtime}: '{tmp_path}/no\\npackage' is not an "
                               "onnxruntime-web package (no dist/")


def test_no_chromium_is_one_line_and_exit_1(tmp_path):
    (tmp_path / "ort" / "dist").mkdir(parents=True)
    (tmp_path / "ort" / "dist" / "ort.webgpu.mjs").write_text("")
    r = onnxop("conformance", tmp_path, "--runtime", "ort-web", "--ort-web", tmp_path / "ort",
               env={"ONNXOP_CHROMIUM": str(tmp_path / "no-chromium")})
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr.startswith("onnxop: error: --runtime ort-web: the browser engine ") and len(r.stderr.splitlines()) == 1
