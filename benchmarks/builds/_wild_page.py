"""`WILD.md`, rendered from the raw JSON of one or more `wild_build` runs."""

from __future__ import annotations

import json
from typing import Any

from benchmarks.builds._wild_hostile import BY_NAME, KINDS, Expected

_GIB_KIB = 2**20
_CELL = 90  # characters of a reason or an error kept in a table cell
_CONFIG_HEAD = (
    "configuration",
    "workers",
    "finished without a person",
    "wall s",
    "inputs/s",
    "samples",
    "rejects",
    "expectations met",
    "kill -9, --resume: identical",
    "worker peak RSS MiB (max)",
    "build peak RSS MiB",
    "within budget",
    "output GiB on disk",
)
_PROBE_HEAD = (
    "kind",
    "configuration",
    "exit",
    "s",
    "peak RSS MiB",
    "what the build made of the hostile inputs",
    "as expected",
    "first miss, or the last line of stderr",
)


def _row(cells: list[str] | tuple[str, ...]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _head(cells: tuple[str, ...], right: set[int]) -> list[str]:
    rule = ["---:" if k in right else "---" for k in range(len(cells))]
    return [_row(cells), "|" + "|".join(rule) + "|"]


def _expected(e: Expected) -> str:
    if e.outcome == "reject":
        return f"reject /{e.reason}/"
    if e.outcome == "sample":
        return f"sample ({e.stored})" if e.stored else "sample"
    return "sample or reject"


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _corpus(run: dict[str, Any]) -> list[str]:
    corpus = run["corpus"]
    params = corpus["params"]
    mean = corpus["regular_bytes"] / max(1, corpus["regular"])
    lines = [
        f"Corpus `{corpus['path']}`: {params['inputs']:,} lines of a `path,label` CSV, "
        f"{params['classes']:,} classes, seed {params['seed']}; {corpus['regular']:,} regular "
        f"JPEGs ({corpus['progressive']:,} progressive), {mean:,.0f} bytes on average; "
        f"{corpus['hostile']:,} hostile inputs ({params['hostile_fraction']:.2%}). Generated in "
        f"{corpus['generate_s']:,} s by {corpus['processes']} processes; "
        f"{corpus['disk_kib'] / _GIB_KIB:,.2f} GiB on disk "
        f"({corpus['apparent_kib'] / _GIB_KIB:,.2f} GiB of bytes).",
        "",
        *_head(("kind", "inputs", "what", "expected, default", "expected, --baseline"), {1}),
    ]
    order = list(BY_NAME)
    for name, count in sorted(corpus["hostile_by_kind"].items(), key=lambda kv: order.index(kv[0])):
        kind = BY_NAME[name]
        expected = (_expected(kind.default), _expected(kind.baseline))
        lines.append(_row([name, str(count), kind.what, *expected]))
    return lines


def _identical(c: dict[str, Any]) -> str:
    kill = c.get("kill")
    if not kill:
        return "-"
    compare = kill.get("compare")
    if compare is None:
        return str(kill.get("note", "resume did not finish"))
    return "yes" if compare["identical"] else "**no**"


def _config_row(c: dict[str, Any]) -> str:
    full, check, budget = c["uninterrupted"], c.get("check"), c["budget"]
    workers = budget["worker_peak_rss_mib"]
    return _row(
        [
            c["config"],
            str(c["workers"]),
            "yes" if c["finished_without_a_person"] else f"**no**: {full['exit']}",
            f"{full['wall_s']:,.1f}",
            f"{c['inputs_per_s']:,.0f}" if "inputs_per_s" in c else "-",
            f"{check['samples']:,}" if check else "-",
            f"{check['rejects']:,}" if check else "-",
            ("yes" if check["all_met"] else "**no**") if check else "-",
            _identical(c),
            _mib(max(workers) if workers else None),
            _mib(budget["build_peak_rss_mib"]),
            f"{'yes' if budget['within'] else '**no**'} (≤ {budget['budget_mib']:,.0f})",
            f"{c['output']['disk_kib'] / _GIB_KIB:,.2f}" if "output" in c else "-",
        ]
    )


def _stops(run: dict[str, Any]) -> list[str]:
    lines = []
    for c in run["configs"]:
        if c["finished_without_a_person"]:
            continue
        full = c["uninterrupted"]
        lines.append(f"- `{c['config']}` stopped ({full['exit']}) after {full['wall_s']:,.1f} s:")
        lines += [f"  `{line[:200]}`" for line in full["stderr_tail"][-3:]]
        rerun = c.get("rerun_with_resume")
        if rerun:
            lines.append(
                f"  Again with `--resume`: {rerun['exit']} after {rerun['wall_s']:,.1f} s."
            )
    return lines


def _kills(run: dict[str, Any]) -> list[str]:
    lines = []
    for c in run["configs"]:
        kill = c.get("kill")
        if not kill:
            continue
        first, compare = kill["killed_run"], kill.get("compare")
        text = (
            f"- `{c['config']}`: SIGKILL to the build's process group after "
            f"{first['wall_s']:,.1f} s, {kill['shards_at_kill']} shards written (target "
            f"{kill['target_shards']})"
        )
        resumes = kill.get("resumes", [])
        if resumes:
            done = ", ".join(f"{r['exit']} in {r['wall_s']:,.1f} s" for r in resumes)
            text += f"; `--resume`: {done}"
        if compare:
            same = "identical" if compare["identical"] else f"DIFFERENT {compare['differ'][:5]}"
            text += f"; {compare['files']} files, {compare['bytes']:,} bytes compared: {same}"
        lines.append(text + (f"; {kill['note']}" if "note" in kill else "") + ".")
    return lines


def _outcomes(c: dict[str, Any]) -> list[str]:
    check = c.get("check")
    if not check:
        return []
    regular = check["regular"]
    lines = [
        "",
        f"`{c['config']}`, {c['workers']} workers: {regular['samples']:,} of "
        f"{regular['inputs']:,} regular inputs are samples ({regular['rejected']:,} rejected, "
        f"{regular['absent']:,} in neither); outcomes beyond the inputs listed: "
        f"{check['unlisted_outcomes']}.",
        "",
        *_head(("kind", "inputs", "as expected", "what the build made of them", "misses"), {1, 2}),
    ]
    for name, k in check["hostile"].items():
        made = "; ".join(f"{n} x {o[:_CELL]}" for o, n in k["outcomes"].items())
        misses = "; ".join(f"`{m['path']}`: {m['why'][:_CELL]}" for m in k["misses"][:2])
        lines.append(_row([name, str(k["count"]), str(k["met"]), made, misses]))
    lines += ["", "Rejects by reason (numbers as N):", "", *_head(("rejects", "reason"), {0})]
    lines += [_row([f"{n:,}", f"`{r}`"]) for r, n in check["rejects_by_reason"].items()]
    return lines


def _probe(run: dict[str, Any]) -> list[str]:
    if not run["probe"]:
        return []
    lines = [
        "",
        f"### Each kind alone, fastpack {run['commit']}",
        "",
        "Per kind and configuration: a list of that kind's inputs (up to 8) and 8 regular ones, "
        "built with `--workers 1` (the shard job runs in the build process).",
        "",
        *_head(_PROBE_HEAD, {3, 4, 6}),
    ]
    for p in run["probe"]:
        counts: dict[str, int] = {}
        for outcome in p["hostile_outcomes"]:
            counts[outcome[:_CELL]] = counts.get(outcome[:_CELL], 0) + 1
        made = "; ".join(f"{n} x {o}" for o, n in counts.items()) or "-"
        note = " ".join(p["last_stderr"] or p["misses"][:1])[: _CELL * 2]
        lines.append(
            _row(
                [
                    p["kind"],
                    p["config"],
                    p["exit"],
                    f"{p['wall_s']:,.1f}",
                    _mib(p["peak_rss_mib"]),
                    made,
                    f"{p['met']} of {p['inputs']}",
                    f"`{note}`" if note else "",
                ]
            )
        )
    return lines


def _command(run: dict[str, Any]) -> str:
    options = run["options"]
    flags = [
        f"--inputs {options['inputs']}",
        f"--hostile-fraction {options['hostile_fraction']}",
        f"--workers {options['workers']}",
        f"--configs {','.join(c['config'] for c in run['configs'])}",
        f"--shard-size {options['shard_size']}",
        f"--kill-at {options['kill_at']}",
        f"--rss-budget-mib {options['rss_budget_mib']}",
        f"--work {options['work']}",
    ]
    if run["probe"]:
        flags.append("--probe")
    if options.get("fastpack") not in (None, "None"):
        flags.append(f"--fastpack {options['fastpack']}")
    return "python -m benchmarks.builds.wild_build " + " ".join(flags)


def _run(run: dict[str, Any]) -> list[str]:
    loads = ", ".join(f"{c['config']} `{c['load_before']}`" for c in run["configs"])
    inputs = run["corpus"]["params"]["inputs"]
    return [
        f"## {inputs:,} inputs, {run['options']['workers']} workers, fastpack {run['commit']}",
        "",
        f"- Date: {run['date']} to {run.get('finished', '?')}.",
        f"- Machine: `{json.dumps(run['machine'])}`; "
        f"free disk before: {run['free_gib_before']} GiB.",
        f"- Versions: `{json.dumps(run['versions'])}`.",
        f"- Load average before each configuration: {loads}.",
        f"- Command: `{_command(run)}`",
        "",
        *_corpus(run),
        "",
        *_head(_CONFIG_HEAD, {1, 3, 4, 5, 6, 9, 10, 12}),
        *(_config_row(c) for c in run["configs"]),
        "",
        *_stops(run),
        *_kills(run),
        *(line for c in run["configs"] for line in _outcomes(c)),
        *_probe(run),
        "",
    ]


def render(runs: list[dict[str, Any]]) -> str:
    head = [
        "# A wild corpus at scale: every input a sample or a named reject",
        "",
        "Written by `python -m benchmarks.builds.wild_build` (its docstring gives the steps; "
        "the corpus: `wild_corpus.py`; the hostile kinds and the outcome expected of each: "
        "`_wild_hostile.py`). Each configuration is built once uninterrupted, then again with "
        "its process group killed (SIGKILL) part way and resumed; every file of the two "
        "outputs is compared. A process's peak RSS is the higher of its sampled VmRSS and the "
        "kernel's VmHWM. `default`: the default build (structure check); `baseline`: "
        f"`--baseline`. {len(KINDS)} hostile kinds. Raw numbers: the JSON files beside this page.",
        "",
    ]
    return "\n".join(head + [line for run in runs for line in _run(run)])
