"""Files shaped exactly as lmms-eval and VLMEvalKit write them, built by our own code from those
toolkits' observed behaviour (their code read, not copied):

lmms-eval (``--log_samples``): each rank postprocesses the documents ``rank, rank + W, ...``
(doc_id is the document's position in the split); rank 0 gathers the ranks' logged samples one
rank after another; the tracker then sets ``input`` to the first request argument (the prompt),
turns every response into a string, since 0.7 unwraps one-request lists (``[[r]] -> [r]``,
``[f] -> f``), drops ``resps`` when it equals ``filtered_resps``, stringifies ``target``, drops
``arguments`` (and, since 0.4, ``doc``), and writes one JSON line per sample
(``ensure_ascii=False``). ``process_results`` receives the stripped responses; its metrics are
copied into the sample.

VLMEvalKit: the dataset's table, in the dataset's row order, with ``prediction`` set to
``str(answer)`` of each row's index, written by pandas as ``.xlsx`` (xlsxwriter, header row in
bold with borders, no row labels), ``.tsv`` (every field quoted) or ``.json`` (row objects).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def lmms_eval_samples(
    docs: Sequence[dict[str, Any]],
    answers: Sequence[str],
    *,
    prompt: Callable[[dict[str, Any]], str],
    process_results: Callable[[dict[str, Any], list[str]], dict[str, Any]] | None = None,
    world_size: int = 1,
    version: tuple[int, int] = (0, 7),
    target: Callable[[dict[str, Any]], Any] = lambda doc: "",
) -> tuple[bytes, list[Any]]:
    """The samples JSONL of one task, and the items its aggregation receives (the values
    ``process_results`` returned, gathered rank after rank)."""
    gathered: list[dict[str, Any]] = []
    items: list[Any] = []
    for rank in range(world_size):
        for doc_id in range(rank, len(docs), world_size):
            doc = docs[doc_id]
            raw = answers[doc_id]
            metrics = process_results(doc, [raw.strip()]) if process_results else {}
            items.extend(metrics.values())
            sample = {
                "doc_id": doc_id,
                "doc": doc,
                "target": target(doc),
                "arguments": [prompt(doc), {"max_new_tokens": 1024, "until": ["\n\n"]}, doc_id],
                "resps": [[raw]],
                "filtered_resps": [raw],
                "token_counts": [None],
                "doc_hash": hashlib.sha256(
                    json.dumps(doc, indent=2, ensure_ascii=False).encode()
                ).hexdigest(),
            }
            sample.update(metrics)
            gathered.append(sample)
    lines = []
    for sample in gathered:
        sample["input"] = sample["arguments"][0]
        if version >= (0, 7):
            if len(sample["resps"]) == 1:
                sample["resps"] = sample["resps"][0]
            if len(sample["filtered_resps"]) == 1:
                sample["filtered_resps"] = sample["filtered_resps"][0]
        if sample["resps"] == sample["filtered_resps"] or (
            isinstance(sample["resps"], list)
            and len(sample["resps"]) == 1
            and sample["resps"][0] == sample["filtered_resps"]
        ):
            sample.pop("resps")
        sample["target"] = str(sample["target"])
        sample.pop("arguments")
        if version >= (0, 4):
            sample.pop("doc")
        lines.append(json.dumps(sample, ensure_ascii=False) + "\n")
    return "".join(lines).encode(), items


def vlmevalkit_table(
    rows: Sequence[dict[str, Any]], predictions: dict[int, str]
) -> tuple[list[str], list[list[Any]]]:
    """The dataset's rows with the ``prediction`` column VLMEvalKit adds."""
    header = [*rows[0].keys(), "prediction"]
    body = [[*r.values(), str(predictions[r["index"]])] for r in rows]
    return header, body


def vlmevalkit_tsv(header: list[str], body: list[list[Any]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(body)
    return out.getvalue().encode("utf-8")


def vlmevalkit_json(header: list[str], body: list[list[Any]]) -> bytes:
    """``PRED_FORMAT=json``: the table as a list of row objects, indented by 4."""
    rows = [dict(zip(header, row, strict=True)) for row in body]
    return json.dumps(rows, indent=4, ensure_ascii=False).encode()


def vlmevalkit_xlsx(header: list[str], body: list[list[Any]], path: Path) -> bytes:
    import xlsxwriter

    book = xlsxwriter.Workbook(str(path), {"strings_to_formulas": False})
    sheet = book.add_worksheet("Sheet1")
    bold = book.add_format({"bold": True, "border": 1, "align": "center", "valign": "top"})
    for c, name in enumerate(header):
        sheet.write_string(0, c, name, bold)
    for r, row in enumerate(body, start=1):
        for c, value in enumerate(row):
            if isinstance(value, int | float):
                sheet.write_number(r, c, value)
            elif value is not None:
                sheet.write_string(r, c, value)
    book.close()
    return path.read_bytes()
