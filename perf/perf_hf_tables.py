"""Loading a local Hugging Face dataset (hf) against the same rows as a byo JSON file, and embedded media.

Printed, measured in one run:

- the time to load N rows from a parquet snapshot with `hf` against the same rows from a byo JSON file (both
  validate every row and check every media path; hf also reads the table and hashes it); target: ratio <= 3;
- the time to load M rows that embed a clip of K MB each the first time (every clip written to the media cache)
  against the second time (each clip found by its hash), and the peak RSS growth of the first load against the
  table's size (rows are converted a few at a time, so it should stay well under the table's size; Linux only:
  the peak is reset through /proc/self/clear_refs).

    uv run python perf/perf_hf_tables.py [-n 20000] [-m 200] [--mb 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def rows(n: int) -> dict[str, list[object]]:
    return {
        "qid": [f"q{k}" for k in range(n)],
        "question": ["Which colour is the square?"] * n,
        "options": [["A. red", "B. blue", "C. green", "D. yellow"]] * n,
        "answer": ["A"] * n,
        "category": ["cross-modal"] * n,
        "requires": [["video", "audio"]] * n,
        "video": ["clip.mp4"] * n,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=20000, help="rows read from paths")
    parser.add_argument("-m", type=int, default=200, help="rows embedding a clip")
    parser.add_argument("--mb", type=float, default=1.0, help="size of each embedded clip")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["OMNIVCHAT_CACHE_DIR"] = str(root / "cache")
        import pyarrow as pa
        import pyarrow.parquet as pq

        from omnivchat.benchmarks import Source
        from omnivchat.benchmarks.byo import load_byo
        from omnivchat.benchmarks.hf import load_hf

        data = root / "snapshot"
        (data / "data").mkdir(parents=True)
        (data / "clip.mp4").write_bytes(b"\x00" * 1024)
        table = rows(args.n)
        pq.write_table(pa.table(table), str(data / "data" / "test-00000-of-00001.parquet"))
        listed = [dict(zip(table, values, strict=True)) for values in zip(*table.values(), strict=True)]
        for row in listed:
            row["options"] = [str(o)[3:] for o in row["options"]]
        (data / "bench.json").write_text(json.dumps(listed))

        start = time.perf_counter()
        byo = load_byo(data / "bench.json")
        byo_s = time.perf_counter() - start
        start = time.perf_counter()
        hf = load_hf(Source(data=data))
        hf_s = time.perf_counter() - start
        assert len(hf.items) == len(byo.items) == args.n
        print(f"{args.n} rows: byo JSON {byo_s:.2f} s, hf parquet {hf_s:.2f} s, ratio {hf_s / byo_s:.2f} (target <= 3)")

        embedded = root / "embedded"
        (embedded / "data").mkdir(parents=True)
        size = int(args.mb * 1e6)
        media = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
        table = rows(args.m)
        clips = [{"bytes": os.urandom(size), "path": f"c{k}.mp4"} for k in range(args.m)]
        schema = pa.schema([(k, pa.table({k: v}).schema.field(k).type) for k, v in table.items() if k != "video"])
        written = pa.table(
            {**{k: v for k, v in table.items() if k != "video"}, "video": pa.array(clips, type=media)},
            schema=schema.append(pa.field("video", media)),
        )
        parquet = embedded / "data" / "test-00000-of-00001.parquet"
        pq.write_table(written, str(parquet), row_group_size=16)
        stream = root / "saved" / "data-00000-of-00001.arrow"  # as save_to_disk writes it: an IPC stream
        stream.parent.mkdir()
        with pa.OSFile(str(stream), "wb") as sink, pa.ipc.new_stream(sink, written.schema) as writer:
            for batch in written.to_batches(max_chunksize=16):
                writer.write_batch(batch)
        (stream.parent / "state.json").write_text(json.dumps({"_data_files": [{"filename": stream.name}]}))
        del clips, written
        for label, folder, table_file in (("parquet", embedded, parquet), ("arrow stream", stream.parent, stream)):
            # Each load in a fresh child process, so that its peak RSS is its own (the parent built the table);
            # the first one with an empty media cache.
            shutil.rmtree(root / "cache", ignore_errors=True)
            first, growth = _child_load(folder)
            second, _ = _child_load(folder)
            megabytes = table_file.stat().st_size / 1e6
            print(
                f"{args.m} rows embedding {args.mb:g} MB each ({megabytes:.0f} MB {label}): first load {first:.2f} s, "
                f"second {second:.2f} s (ratio {first / second:.2f}); peak RSS growth of the load "
                f"{growth / 1e6:.0f} MB ({growth / 1e6 / megabytes:.2f} of the table)"
            )


def _child_load(data: Path) -> tuple[float, int]:
    """(seconds, peak RSS growth in bytes) of load_hf on ``data`` in a fresh Python process."""
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from omnivchat.benchmarks import Source\n"
        "from omnivchat.benchmarks.hf import load_hf\n"
        "import pyarrow.parquet\n"
        "def hwm():\n"
        "    line = next(x for x in open('/proc/self/status') if x.startswith('VmHWM'))\n"
        "    return int(line.split()[1]) * 1024\n"
        "open('/proc/self/clear_refs', 'w').write('5')  # the peak restarts from the current RSS\n"
        "before = hwm()\n"
        "start = time.perf_counter()\n"
        "load_hf(Source(data=Path(sys.argv[1])))\n"
        "took = time.perf_counter() - start\n"
        "print(took, hwm() - before)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(data)], check=True, capture_output=True, text=True)
    took, growth = out.stdout.split()
    return float(took), int(growth)


if __name__ == "__main__":
    main()
