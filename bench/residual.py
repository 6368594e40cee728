#!/usr/bin/python3
"""Where a registration path spends what the GUP series does not remove.

usage: residual.py STOCK_DIR PATCHED_DIR   (as for compare.py)

For each path, its median time minus the median time of the bare pin that
the path itself uses, on the same buffer layout in the same boot: rxe's
ib_umem_get() and iommufd pin with pin_user_pages_fast(FOLL_LONGTERM)
(the kmod row), VFIO type1 with pin_user_pages_remote(FOLL_LONGTERM)
(the kbench-pup_longterm row). A remainder that is the same on both
kernels is the path's own work, which the series does not touch.
"""
import json
import os
import pathlib
import sys

FOLIOS = ["4k", "16k", "64k", "1m", "2m-pte", "2m-pmd"]
PAIRS = [("verbs", "kmod"), ("iommufd", "kmod"), ("vfio", "kbench-pup_longterm")]


def medians(root):
    doc = json.loads((pathlib.Path(root) / "registration" / "results.json").read_text())
    return {(c["path"].split("@")[0], c["folio"]): c["value"]["median"]
            for c in doc["cells"]}


def table(stock, patched, path, pin):
    out = [f"### {path} = {pin} + rest (ms)", "",
           "| folio | stock total | stock pin | stock rest | patched total "
           "| patched pin | patched rest | total speedup | pin speedup |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for f in FOLIOS:
        keys = [(path, f), (pin, f)]
        if not all(k in stock and k in patched for k in keys):
            continue
        st, sp = stock[(path, f)], stock[(pin, f)]
        pt, pp = patched[(path, f)], patched[(pin, f)]
        out.append(f"| {f} | {st:.2f} | {sp:.2f} | {st - sp:.2f} | {pt:.2f} "
                   f"| {pp:.2f} | {pt - pp:.2f} | {st / pt:.2f}x | {sp / pp:.2f}x |")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    stock, patched = medians(sys.argv[1]), medians(sys.argv[2])
    clock = os.environ.get("MREG_TCG_CLOCK", "qemu TCG")
    print(f"Median times, {clock}; only the ratios and the differences "
          "within one column mean anything.\n")
    print("\n".join(table(stock, patched, path, pin) for path, pin in PAIRS))


if __name__ == "__main__":
    main()
