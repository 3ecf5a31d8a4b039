#!/usr/bin/env bash
# Fetch Mesa 25's lavapipe (Vulkan on the CPU) from Debian 12's
# bookworm-backports into a folder, without root and without touching the
# system's Mesa, and print the two variables that select it:
#
#     eval "$(scripts/mesa25.sh ~/.local/share/onnxop/mesa25)"
#     onnxop info --backend vulkan      # driver: Mesa 25.0.7-2~bpo12+1 ...
#
# A folder that already holds it is used as it is, with no download
# (MESA_REFRESH=1 fetches again). Debian/Ubuntu with apt only. Mesa 25
# needs libdrm >= 2.4.121 (bookworm has 2.4.114), so the backports' libdrm
# comes along; the driver's other libraries (LLVM 15, ...) are the system's.
set -euo pipefail
dest=$(realpath -m "${1:-$HOME/.local/share/onnxop/mesa25}")
suite=${MESA_SUITE:-bookworm-backports}
icd="$dest/usr/share/vulkan/icd.d/lvp_icd.json"
lib_dir() {  # the folder holding lavapipe and the backports' libdrm; empty if incomplete
    local lvp
    lvp=$(ls "$dest"/usr/lib/*/libvulkan_lvp.so 2>/dev/null | head -1) || true
    if [ -f "$icd" ] && [ -n "$lvp" ] && [ -e "$(dirname "$lvp")/libdrm.so.2" ]; then dirname "$lvp"; fi
}
# Already fetched into this folder (MESA_REFRESH=1 fetches again): no download.
if [ -n "${MESA_REFRESH:-}" ] || [ -z "$(lib_dir)" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    chmod 755 "$work"  # apt downloads as its _apt user when run as root
    mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$dest"
    cat > "$work/sources" <<SOURCES
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main
SOURCES
    apt_opts=(-o "Dir::Etc::sourcelist=$work/sources" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$work/lists"
              -o "Dir::Cache=$work/cache" -o Debug::NoLocking=1 -qq)
    apt-get "${apt_opts[@]}" update >&2
    (cd "$work" && apt-get "${apt_opts[@]}" download mesa-vulkan-drivers libdrm2 libdrm-amdgpu1 >&2)
    for deb in "$work"/*.deb; do dpkg -x "$deb" "$dest"; done
fi
lib=$(lib_dir)
[ -n "$lib" ] || { echo "mesa25.sh: no lavapipe in the downloaded packages" >&2; exit 1; }
# The ICD file names the library without a folder: LD_LIBRARY_PATH finds it.
echo "export VK_ICD_FILENAMES=$icd"
echo "export LD_LIBRARY_PATH=$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
