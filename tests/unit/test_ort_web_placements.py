"""How the ort-web runtimes read onnxruntime's node placements (its verbose
log, session_state.cc's VerifyEachNodeIsAssignedToAnEp) and its refusals: a
node on the CPU provider is a fallback, Memcpy nodes aside; a log without
placements is no pass; what the build lacks is skipped, not an error."""

from __future__ import annotations

import pytest

from onnxop_cli.docs.runtimes.base import Broke, Lacks, Refused
from onnxop_cli.docs.runtimes.ort_web import placed_elsewhere, refused

HEAD = "2026-12-05 16:33:18.651799 [V:onnxruntime:, session_state.cc:1578 VerifyEachNodeIsAssignedToAnEp]"
WEBGPU = "WebGpuExecutionProvider"


def log(*lines: str) -> list[str]:
    return [f"{HEAD} Node placements", *(f"{HEAD} {line}" for line in lines)]


def test_every_node_on_webgpu_is_no_fallback():
    assert placed_elsewhere(log(f" All nodes placed on [{WEBGPU}]. Number of nodes: 1"), WEBGPU, ["Gather"]) == ""


def test_every_node_on_the_cpu_provider_names_the_operators():
    got = placed_elsewhere(log(" All nodes placed on [CPUExecutionProvider]. Number of nodes: 1"), WEBGPU, ["Gather"])
    assert got == f"onnxruntime-web placed Gather on CPUExecutionProvider, not on {WEBGPU}"


def test_some_nodes_on_the_cpu_provider_are_named_and_memcpy_is_not_a_fallback():
    lines = log(f" Node(s) placed on [{WEBGPU}]. Number of nodes: 2", "  Transpose (t)", "  MemcpyToHost (m)",
                " Node(s) placed on [CPUExecutionProvider]. Number of nodes: 2", "  Gather (g)", "  MemcpyFromHost (n)")
    assert placed_elsewhere(lines, WEBGPU, ["Transpose", "Gather"]) == (
        f"onnxruntime-web placed Gather on CPUExecutionProvider, not on {WEBGPU}")
    only_copies = log(f" Node(s) placed on [{WEBGPU}]. Number of nodes: 1", "  Gather (g)",
                      " Node(s) placed on [CPUExecutionProvider]. Number of nodes: 1", "  MemcpyToHost (m)")
    assert placed_elsewhere(only_copies, WEBGPU, ["Gather"]) == ""


def test_a_log_without_placements_cannot_pass():
    with pytest.raises(Broke, match="no node placements"):
        placed_elsewhere(["[I:onnxruntime:, inference_session.cc:2852 operator()] Adding default CPU execution "
                          "provider."], WEBGPU, ["Gather"])


@pytest.mark.parametrize("text, kind", [
    ("Can't create a session. ERROR_CODE: 1, ERROR_MESSAGE: /mnt/b/_work/1/s/onnxruntime/core/graph/model.cc:257 "
     "onnxruntime::Model::Model(ModelProto &&, const PathString &) Unsupported model IR version: 14, max supported "
     "IR version: 13", Lacks),
    ("Can't create a session. ERROR_CODE: 1, ERROR_MESSAGE: /mnt/b/_work/1/s/onnxruntime/core/optimizer/"
     "transformer_memcpy.cc:254 bool onnxruntime::TransformerMemcpyImpl::IsNodeCompatibleWithProvider(const "
     "onnxruntime::Node &) const !node_provider_type.empty() was false. Provider type for Where node with name '' "
     "is not set.", Lacks),
    ("failed to call OrtRun(). ERROR_CODE: 2, ERROR_MESSAGE: Non-zero status code returned while running Gather "
     "node. Name:'' Status Message: indices element out of data bounds, idx=5 must be within the inclusive range "
     "[-5,4]", Refused),
])
def test_refusals_and_what_the_build_lacks(text, kind):
    got = refused(text)
    assert type(got) is kind
    assert "/mnt/" not in str(got) and "ERROR_CODE" not in str(got) and "IsNodeCompatibleWithProvider" not in str(got)


def test_a_refusal_keeps_the_runtimes_words():
    got = refused("failed to call OrtRun(). ERROR_CODE: 1, ERROR_MESSAGE: /mnt/b/_work/1/s/onnxruntime/core/providers/"
                  "webgpu/shader_helper.cc:354 ShaderVariableHelper &onnxruntime::webgpu::ShaderHelper::AddVariableImpl"
                  "(bool, const std::string &, ShaderUsage, const TensorShape &) numbers_storage_buffers_ <= "
                  "limits_.maxStorageBuffersPerShaderStage was false. Too many storage buffers in shader. Current: 11, "
                  "Max is 10")
    assert str(got) == ("failed to call OrtRun(). webgpu/shader_helper.cc:354 numbers_storage_buffers_ <= "
                        "limits_.maxStorageBuffersPerShaderStage was false. Too many storage buffers in shader. "
                        "Current: 11, Max is 10")


def test_a_node_folded_away_at_load_did_not_run_on_webgpu():
    """onnxruntime computes a node whose inputs are all constants when it makes the session (ConstantFolding, on
    its CPU provider), and leaves no node to place: a Transpose of an initializer 'passed' on WebGPU, and so did a
    Concat after one, where no Transpose ran there. Fewer nodes placed on the provider than the model has (its
    Constant nodes aside, which become initializers) is not_on_webgpu."""
    assert placed_elsewhere(log(), WEBGPU, ["Transpose"]) == (
        f"onnxruntime-web placed 0 of the model's 1 node(s) (Transpose) on {WEBGPU}: it removed the others as it "
        "loaded the model (constant folding on its CPU provider, or another rewrite), so they did not run there")
    one = log(f" All nodes placed on [{WEBGPU}]. Number of nodes: 1")
    assert placed_elsewhere(one, WEBGPU, ["Transpose", "Concat"]).startswith(
        "onnxruntime-web placed 1 of the model's 2 node(s) (Transpose, Concat)")
    assert placed_elsewhere(one, WEBGPU, ["Constant", "Concat"]) == ""
    listed = log(f" Node(s) placed on [{WEBGPU}]. Number of nodes: 2", "  Transpose (t)", "  Concat (c)",
                 " Node(s) placed on [CPUExecutionProvider]. Number of nodes: 1", "  MemcpyToHost (m)")
    assert placed_elsewhere(listed, WEBGPU, ["Transpose", "Concat"]) == ""
