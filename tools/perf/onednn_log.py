"""oneDNN's verbose log (`ONEDNN_VERBOSE=1`) read back: each matmul primitive's own time,
attributed to the library and the product that ran it by marker lines the caller writes among
oneDNN's (`tools.perf.onednn_primitives`)."""

import collections
import statistics

LIBRARIES = ("tf", "torch")
PRIMITIVE_KINDS = ("matmul", "gemm_api", "inner_product")


def parse_log(lines):
    """Reads `FORM round library index` marker lines and oneDNN's verbose lines among them.

    Returns (versions {library: "v3.7.3"}, times {(round, library, index): [ms, ...]} of the
    matmul-like primitives run after each marker, primitives {(library, index): (implementation,
    memory descriptors)} of the first such primitive of each)."""
    versions, times, primitives = {}, collections.defaultdict(list), {}
    current = None
    for line in lines:
        if line.startswith("FORM "):
            _, round_, library, index = line.split()
            current = (int(round_), library, int(index))
            continue
        if not line.startswith("onednn_verbose,") or current is None:
            continue
        fields = line.rstrip("\n").split(",")
        if "info" in fields[:3] and fields[3].startswith("oneDNN v"):
            versions.setdefault(current[1], fields[3].split()[1])
        elif "exec" in fields and "cpu" in fields:
            kind = fields[fields.index("cpu") + 1]
            if kind not in PRIMITIVE_KINDS:
                continue
            times[current].append(float(fields[-1]))
            implementation = fields[fields.index("cpu") + 2] or kind
            descriptors = fields[fields.index("cpu") + 4]
            primitives.setdefault(current[1:], (implementation, descriptors))
    return versions, dict(times), primitives


def _layouts(descriptors):
    """The memory layouts of a verbose line's descriptors, without their names' spelling
    (v3.7 writes `src_f32::blocked:ab:f0`, later versions `src:f32::blocked:ab::f0`)."""
    return [part.replace("::", ":").replace("_", ":", 1).split(":", 1)[1]
            for part in descriptors.split()] if descriptors else []


def summarize(forms, versions, times, primitives, products_per_round):
    """One record per form ((name, [m, k, n]) in `forms` order): each round's GFLOP/s inside
    the primitives (rounds after the first), TensorFlow's over torch's, and their medians, and
    how many primitives ran per product (1.0 where each product is one)."""
    records = []
    rounds = sorted({key[0] for key in times})[1:]
    for index, (name, (m, k, n)) in enumerate(forms):
        flop = 2 * m * k * n
        record = {"product": f"[{m}, {k}] @ [{k}, {n}]", "what": name}
        for library in LIBRARIES:
            implementation, descriptors = primitives.get((library, index), (None, ""))
            record[f"{library}_onednn"] = versions.get(library)
            record[f"{library}_implementation"] = implementation
            rates = [flop * len(times[(r, library, index)]) / sum(times[(r, library, index)])
                     / 1e6 for r in rounds if times.get((r, library, index))]
            record[f"{library}_gflop_per_s"] = [round(rate, 1) for rate in rates]
            record[f"{library}_median_gflop_per_s"] = (round(statistics.median(rates), 1)
                                                       if rates else None)
            record[f"{library}_primitives_per_product"] = (
                len(times.get((rounds[0], library, index), [])) / products_per_round
                if rounds else None)
        same = primitives.get(("tf", index)) and primitives.get(("torch", index))
        record["same_layouts"] = (_layouts(primitives[("tf", index)][1])
                                  == _layouts(primitives[("torch", index)][1])) if same else None
        ratios = [a / b for a, b in zip(record["tf_gflop_per_s"], record["torch_gflop_per_s"])]
        record["tf_over_torch"] = [round(r, 2) for r in ratios]
        record["median_tf_over_torch"] = round(statistics.median(ratios), 2) if ratios else None
        records.append(record)
    return records
