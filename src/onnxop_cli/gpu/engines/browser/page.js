// onnxop's side of the browser engine (engines/browser/): WebGPU objects live
// here, in a table keyed by the ids Python gives them. Python sends a batch of
// operations; they run in order and the batch answers with the results of the
// ones that return something, the first error, and a device loss.
"use strict";
const objs = new Map();
let adapter = null, device = null, lost = null;
const uncaptured = [];
const B64 = (u8) => u8.toBase64();
const U8 = (s) => Uint8Array.fromBase64(s);
const get = (id) => { const o = objs.get(id); if (o === undefined) throw new Error(`object ${id} is gone`); return o; };
const kebab = (k) => k.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase());
const limitsOf = (l) => { const out = {}; for (const k in l) if (typeof l[k] === "number") out[kebab(k)] = l[k]; return out; };

function encode(commands) {
  const enc = device.createCommandEncoder();
  for (const c of commands) {
    if (c[0] === "pass") {
      const desc = c[1] ? { timestampWrites: { querySet: get(c[1][0]), beginningOfPassWriteIndex: c[1][1] ?? undefined, endOfPassWriteIndex: c[1][2] ?? undefined } } : {};
      const pass = enc.beginComputePass(desc);
      for (const p of c[2]) {
        if (p[0] === "pipe") pass.setPipeline(get(p[1]));
        else if (p[0] === "bind") pass.setBindGroup(p[1], get(p[2]), p[3]);
        else pass.dispatchWorkgroups(p[1], p[2], p[3]);
      }
      pass.end();
    } else if (c[0] === "copy") enc.copyBufferToBuffer(get(c[1]), c[2], get(c[3]), c[4], c[5]);
    else if (c[0] === "clear") enc.clearBuffer(get(c[1]), c[2], c[3]);
    else if (c[0] === "resolve") enc.resolveQuerySet(get(c[1]), c[2], c[3], get(c[4]), c[5]);
    else throw new Error(`unknown command ${c[0]}`);
  }
  return enc.finish();
}

async function one(op) {
  switch (op[0]) {
    case "adapter": {
      adapter = await navigator.gpu.requestAdapter();
      if (!adapter) return null;
      const i = adapter.info;
      return { vendor: i.vendor, architecture: i.architecture, device: i.device, description: i.description,
               backend: i.backend || "", type: i.type || "", driver: i.driver || "",
               features: [...adapter.features], limits: limitsOf(adapter.limits) };
    }
    case "device": {
      const requiredLimits = {};
      for (const k in adapter.limits) if (typeof adapter.limits[k] === "number") requiredLimits[k] = adapter.limits[k];
      device = await adapter.requestDevice({ requiredFeatures: op[1], requiredLimits });
      device.lost.then((info) => { if (info.reason !== "destroyed") lost = info.message || "device lost"; });
      device.onuncapturederror = (e) => uncaptured.push(e.error.message);
      return { features: [...device.features], limits: limitsOf(device.limits) };
    }
    case "buffer": objs.set(op[1], device.createBuffer({ label: op[4], size: op[2], usage: op[3] })); return;
    case "write": device.queue.writeBuffer(get(op[1]), op[2], U8(op[3])); return;
    case "module": {
      const m = device.createShaderModule({ label: op[3], code: op[2] });
      const info = await m.getCompilationInfo();
      const bad = info.messages.filter((x) => x.type === "error");
      if (bad.length) throw new Error(bad.map((x) => `${x.lineNum}:${x.linePos}: ${x.message}`).join("; "));
      objs.set(op[1], m); return;
    }
    case "pipeline":
      objs.set(op[1], await device.createComputePipelineAsync({ label: op[5], layout: op[2] === "auto" ? "auto" : get(op[2]),
        compute: { module: get(op[3]), entryPoint: op[4] } }));
      return;
    case "bgl":
      objs.set(op[1], device.createBindGroupLayout({ label: op[3], entries: op[2].map((e) => ({ binding: e[0], visibility: e[1],
        buffer: { type: e[2], hasDynamicOffset: e[3], minBindingSize: e[4] } })) }));
      return;
    case "pl": objs.set(op[1], device.createPipelineLayout({ label: op[3], bindGroupLayouts: op[2].map(get) })); return;
    case "layout_of": objs.set(op[1], get(op[2]).getBindGroupLayout(op[3])); return;
    case "bg":
      objs.set(op[1], device.createBindGroup({ label: op[4], layout: get(op[2]), entries: op[3].map((e) => ({ binding: e[0],
        resource: { buffer: get(e[1]), offset: e[2], size: e[3] } })) }));
      return;
    case "query_set": objs.set(op[1], device.createQuerySet({ type: op[2], count: op[3] })); return;
    case "submit": device.queue.submit(op[1].map(encode)); return;
    case "read": {
      const b = get(op[1]);
      await b.mapAsync(GPUMapMode.READ, op[2], op[3]);
      const out = B64(new Uint8Array(b.getMappedRange(op[2], op[3])));
      b.unmap();
      return out;
    }
    case "mapwrite": {
      const b = get(op[1]), data = U8(op[3]);
      await b.mapAsync(GPUMapMode.WRITE, op[2], data.length);
      new Uint8Array(b.getMappedRange(op[2], data.length)).set(data);
      b.unmap();
      return;
    }
    case "destroy": get(op[1]).destroy(); return;
    case "free": for (const id of op[1]) objs.delete(id); return;
    default: throw new Error(`unknown operation ${op[0]}`);
  }
}

const SCOPED = new Set(["buffer", "write", "module", "pipeline", "bgl", "pl", "layout_of", "bg", "query_set", "submit", "mapwrite", "read", "destroy"]);

window.onnxopRun = async (ops) => {
  // Error scopes are popped without waiting (a round trip to the GPU process
  // each); they are awaited together at the end, the first error answering.
  const out = [], scopes = [];
  let error = null;
  for (const op of ops) {
    if (lost) break;
    const scoped = device !== null && SCOPED.has(op[0]);
    if (scoped) { device.pushErrorScope("out-of-memory"); device.pushErrorScope("validation"); }
    let result;
    try { result = await one(op); } catch (e) { error = `${op[0]}: ${e.message || e}`; }
    if (scoped) scopes.push([op[0], device.popErrorScope(), device.popErrorScope()]);
    if (error) break;
    if (result !== undefined) out.push(result);
  }
  let oom = false;
  for (const [what, invalid, memory] of scopes) {
    const [v, m] = [await invalid, await memory];
    if (!error && m) { error = `${what}: ${m.message || "out of memory"}`; oom = true; }
    if (!error && v) error = `${what}: ${v.message}`;
  }
  if (!error && uncaptured.length) error = uncaptured.splice(0).join("; ");
  return { out, error, oom, lost };
};
