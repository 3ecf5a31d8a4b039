// The page of the ort-web runtimes (ort_web.py): onnxruntime-web's bundle,
// served under /files/, loaded by import(); sessions on its WebGPU execution
// provider, kept in a table keyed by the ids Python gets back. Tensors cross
// as base64 of their bytes (NaN payloads intact: no number is ever a JSON
// float); the log lines the runtime writes while it loads a model (its node
// placements, at verbose level) come back with the session.
"use strict";
const logs = [];
for (const level of ["log", "info", "warn", "error", "debug"]) {
  const original = console[level].bind(console);
  console[level] = (...args) => { logs.push(args.map(String).join(" ")); original(...args); };
}
const ARRAYS = {
  float32: Float32Array, float64: Float64Array, float16: globalThis.Float16Array || Uint16Array,
  int8: Int8Array, uint8: Uint8Array, int16: Int16Array, uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array,
  int64: BigInt64Array, uint64: BigUint64Array, bool: Uint8Array, int4: Uint8Array, uint4: Uint8Array,
};
const sessions = new Map();
let ort = null, nextId = 1;
const text = (e) => String((e && e.message) || e);
const bytesOf = (a) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

window.onnxopOrt = {
  async init(bundle) {
    ort = await import(`/files/dist/${bundle}`);
    ort.env.wasm.wasmPaths = "/files/dist/";
    ort.env.wasm.numThreads = 1;  // no SharedArrayBuffer here (no cross-origin isolation), and the same each run
    ort.env.wasm.proxy = false;
    ort.env.logLevel = "verbose";
    const adapter = await navigator.gpu?.requestAdapter();
    const info = adapter ? adapter.info : {};
    return { version: ort.env.versions?.web || "",
             adapter: adapter ? `${info.vendor} ${info.architecture} ${info.description}`.trim() : "" };
  },
  async load(model) {
    logs.length = 0;
    try {
      const session = await ort.InferenceSession.create(Uint8Array.fromBase64(model), {
        executionProviders: ["webgpu"], logSeverityLevel: 0, logVerbosityLevel: 0 });
      const id = nextId++;
      sessions.set(id, session);
      return { id, inputs: session.inputNames, outputs: session.outputNames, log: logs.splice(0) };
    } catch (e) {
      return { error: text(e), log: logs.splice(0) };
    }
  },
  async run([id, feeds]) {
    try {  // whatever it throws is this run's error, never the page's
      const session = sessions.get(id), named = {};
      for (const [name, type, dims, data] of feeds) {
        const u8 = Uint8Array.fromBase64(data), View = ARRAYS[type];
        const count = type === "int4" || type === "uint4" ? u8.length : u8.length / View.BYTES_PER_ELEMENT;
        named[name] = new ort.Tensor(type, new View(u8.buffer, 0, count), dims);
      }
      const results = await session.run(named);
      return { outputs: session.outputNames.map((n) => {
        const t = results[n];
        return [t.type, t.dims.map(Number), typeof t.data[0] === "string" ? null : bytesOf(t.data).toBase64()];
      }) };
    } catch (e) {
      return { error: text(e) };
    }
  },
  async release(id) {
    const session = sessions.get(id);
    sessions.delete(id);
    if (session) await session.release();
  },
};
