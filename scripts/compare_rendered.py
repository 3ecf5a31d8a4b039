"""Compare a rendered kernel with the hand-written shader it replaces: both
with comments and whitespace removed, split into top-level declarations and
sorted (the frame orders them its own way). Prints the declarations that
differ. Usage: python scripts/compare_rendered.py OLD_TREE"""

import re
import subprocess
import sys


def decls(text: str) -> list[str]:
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"\s+", "", text).replace(",)", ")").replace(",}", "}")
    out, depth, cur = [], 0, ""
    for ch in text:
        cur += ch
        if ch in "{(":
            depth += 1
        elif ch in "})":
            depth -= 1
            if depth == 0 and ch == "}":
                out.append(cur)
                cur = ""
        elif ch == ";" and depth == 0:
            out.append(cur)
            cur = ""
    if cur.strip():
        out.append(cur)
    return sorted(d for d in out if d)


def old(tree: str, shader: str, constants: dict) -> str:
    return subprocess.run([f"{tree}/.venv/bin/python", "-c", (
        "import sys; from onnxop_cli.gpu.shaders import shader_source; "
        f"sys.stdout.write(shader_source({shader!r}, **{constants!r}))")],
        cwd=tree, capture_output=True, text=True, check=True,
        env={"PYTHONPATH": f"{tree}/src", "PATH": "/usr/bin:/bin"}).stdout


def main() -> int:
    from onnxop_cli.gpu.render import strided

    pairs = [("gather.wgsl", {}, strided.KERNELS["generic"].wgsl()),
             ("transpose_tiled.wgsl", {}, strided.KERNELS["tiled"].wgsl()),
             ("transpose_blocked.wgsl", {}, strided.KERNELS["blocked"].wgsl())]
    from onnxop_cli.gpu.render import lines

    if True:
        for (unit, kind), kernel in lines.LINES.items():
            pairs.append(("gather_lines.wgsl", {"UNIT": unit, "KIND": kind}, kernel.wgsl()))
    bad = 0
    for shader, constants, text in pairs:
        a, b = decls(old(sys.argv[1], shader, constants)), decls(text)
        if "UNIT" in constants:  # intended: start() inlined (the schedule's head), UNIT's branch resolved
            unit = constants["UNIT"]
            a = [d.replace("letw0=start(wg,lid);", "letw0=((wg.y*params.groups_x+wg.x)*WG+lid)*WORDS;") for d in a
                 if not d.startswith(("fnstart(", "constUNIT:", f"fnwords{3 - unit}(", "@compute"))]
            b = [d for d in b if not d.startswith("@compute") or print(f"  main: {d[d.index('{'):]}")]
        only_old = [d for d in a if d not in b]
        only_new = [d for d in b if d not in a]
        print(f"{shader} {constants}: {'same' if not (only_old or only_new) else 'DIFFERENT'}")
        for d in only_old:
            print("  old:", d[:400])
        for d in only_new:
            print("  new:", d[:400])
        bad += bool(only_old or only_new)
    return bad


if __name__ == "__main__":
    sys.exit(main())
