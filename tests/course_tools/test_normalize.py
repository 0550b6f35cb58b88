"""sanitize_text / normalize_notebook / audit_notebook."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from course_tools.notebooks import normalize
from course_tools.notebooks.normalize import audit_notebook, normalize_notebook, sanitize_rules, sanitize_text

ROOT = Path(__file__).resolve().parents[2]


def test_rules_come_from_the_nbval_sanitize_file():
    assert normalize.SANITIZE_FILE == ROOT / "src" / "course_tools" / "notebooks" / "nbval_sanitize.cfg"
    rules = sanitize_rules()
    assert [r for _, r in rules][:3] == ["0xADDRESS", "<notebook cell>", "<tmpdir>"]
    assert len(rules) == len(set(r.pattern for r, _ in rules))


# One recompile, and two guard-dump lines, exactly as torch 2.14.1 logs them from a notebook.
TORCH_LOG = """\
V1130 13:54:19.830000 6542 torch/_dynamo/guards.py:5621] [0/1] [__recompiles] Recompiling function f in /tmp/ipykernel_6542/1234567.py:3
V1130 13:54:19.830000 6542 torch/_dynamo/guards.py:5621] [0/1] [__recompiles]     - 0/0: tensor 'x' dtype mismatch. expected Float, actual Double
V1130 13:54:19.706000 6542 torch/_dynamo/guards.py:4693] [0/0_1] [__guards] | +- LAMBDA_GUARD: torch._functorch.aot_autograd.utils.top_saved_tensors_hooks ids == None  # _dynamo/output_graph.py:1194 in init_ambient_guards
V1130 13:54:19.706000 6542 torch/_dynamo/guards.py:4693] [0/0_1] [__guards] | | | | +- ID_MATCH: ___check_obj_id(G['__builtins_dict___1']['print'], 140529086797424), type=<class 'builtin_function_or_method'>  # print("hi")  # mp/ipykernel_6542/1234567.py:5 in f
V1130 13:54:19.706000 6542 torch/_dynamo/guards.py:4693] [0/0_1] [__guards] | +- GLOBAL_STATE: ___check_global_state() against {"grad_mode":true,"num_threads":2,"torch_function":true}
V1130 13:54:19.745000 6542 torch/_dynamo/guards.py:4736] [0/0_1] [__guards] Guard eval latency = 61.52 us
"""  # noqa: E501  (torch's log lines, verbatim)


def test_torch_log_lines_keep_their_words_and_lose_time_pid_and_torch_line_numbers():
    clean = sanitize_text(TORCH_LOG).splitlines()
    prefix = "VMMDD hh:mm:ss.us PID torch/_dynamo/guards.py:N]"
    assert all(line.startswith(prefix) for line in clean)
    assert clean[0].endswith("[__recompiles] Recompiling function f in <notebook cell>:3")
    assert clean[1].endswith("- 0/0: tensor 'x' dtype mismatch. expected Float, actual Double")
    assert clean[2].endswith("# _dynamo/output_graph.py:N in init_ambient_guards")
    assert clean[3].endswith("___check_obj_id(G['__builtins_dict___1']['print'], ID), "
                             "type=<class 'builtin_function_or_method'>  # print(\"hi\")  # <notebook cell>:5 in f")
    assert '"num_threads":N,' in clean[4]
    assert clean[5].endswith("Guard eval latency = T us")
    assert sanitize_text("\n".join(clean)) == "\n".join(clean)  # idempotent


def test_kernel_frames_in_a_user_stack_lose_machine_paths_and_line_numbers():
    stack = ('  File "<frozen runpy>", line 198, in _run_module_as_main\n'
             '  File "/home/ann/.venv/lib/python3.11/site-packages/ipykernel/kernelbase.py", line 541, '
             'in dispatch_queue\n'
             '    await self.process_one()\n'
             '  File "/usr/lib/python3.11/asyncio/events.py", line 84, in _run\n'
             '  File "/tmp/ipykernel_11790/3429352863.py", line 6, in f\n')
    assert sanitize_text(stack) == ('  File "<frozen runpy>", line N, in _run_module_as_main\n'
                                    '  File "<python>/ipykernel/kernelbase.py", line N, in dispatch_queue\n'
                                    '    await self.process_one()\n'
                                    '  File "<python>/asyncio/events.py", line N, in _run\n'
                                    '  File "<notebook cell>", line 6, in f\n')


def test_guard_comments_lose_torch_line_numbers_only():
    line = ("| | +- TENSOR_MATCH: check_tensor(...)  # return F.linear(input, self.weight, self.bias)  "
            "# nn/modules/linear.py:134 in forward")
    assert sanitize_text(line).endswith("# nn/modules/linear.py:N in forward")
    mine = "| | +- TENSOR_MATCH: check_tensor(...)  # y = x * 2  # mp/ipykernel_1/22.py:5 in f"
    assert sanitize_text(mine).endswith("# y = x * 2  # <notebook cell>:5 in f")


def test_install_paths_and_compiled_fn_uuids():
    text = ("Recompiling function inner in "
            "/home/ann/.venv/lib/python3.11/site-packages/torch/_dynamo/external_utils.py:70\n"
            "LOAD_GLOBAL 7 (NULL + __compiled_fn_2_68aca73b_6c5a_4fba_b395_791ead7cfaf0)")
    assert sanitize_text(text) == ("Recompiling function inner in torch/_dynamo/external_utils.py:N\n"
                                   "LOAD_GLOBAL 7 (NULL + __compiled_fn_2_<uuid>)")


PREFIX = "V1203 14:57:38.123456 4242 torch/_dynamo/convert_frame.py:1234] [0/0] [__bytecode] "


def _bytecode_log(rows: list[str]) -> str:
    return "".join(PREFIX + row + "\n" for row in rows)


def test_a_bytecode_listing_compares_the_same_on_python_3_11_and_3_12():
    """CPython's instructions differ by Python minor (make drift PYTHON= found notebook 03's listing changed
    row by row on 3.12); the headers and the row that loads the captured graph are kept."""
    compiled = "             2 LOAD_GLOBAL              5 (NULL + __compiled_fn_5_68aca73b_6c5a_4fba_b395_791ead7cfaf0)"
    on_311 = _bytecode_log(["ORIGINAL BYTECODE reference <notebook cell> line 2 ",
                            "  2           0 RESUME                   0", "",
                            "  3           2 LOAD_GLOBAL              0 (torch)",
                            "             14 LOAD_METHOD              1 (where)",
                            "             58 PRECALL                  3", "             72 RETURN_VALUE", "",
                            "MODIFIED BYTECODE reference <notebook cell> line 2 ",
                            "  2           0 RESUME                   0", compiled,
                            "             40 PRECALL                  0", ""])
    on_312 = _bytecode_log(["ORIGINAL BYTECODE reference <notebook cell> line 2 ",
                            "  2           0 RESUME                   0", "",
                            "  3           2 LOAD_GLOBAL              0 (torch)",
                            "             12 LOAD_ATTR                3 (NULL|self + where)",
                            "             54 CALL                     3", "             62 RETURN_VALUE", "",
                            "MODIFIED BYTECODE reference <notebook cell> line 2 ",
                            "  2           0 RESUME                   0", compiled,
                            "             38 CALL                     0", "", ""])
    assert sanitize_text(on_311) == sanitize_text(on_312)
    rows = [line.split("[__bytecode] ")[1] for line in sanitize_text(on_311).splitlines()]
    placeholder = "<CPython's instructions for this Python version>"
    assert rows == ["ORIGINAL BYTECODE reference <notebook cell> line 2 ", placeholder,
                    "MODIFIED BYTECODE reference <notebook cell> line 2 ", placeholder,
                    "LOAD_GLOBAL (__compiled_fn_5_<uuid>)", placeholder]
    assert sanitize_text(sanitize_text(on_312)) == sanitize_text(on_312)   # stored outputs are sanitized again


def test_the_version_line_compares_the_same_on_every_supported_python():
    """start()'s line names the Python minor; make drift PYTHON= found it changed in every notebook on 3.12."""
    lines = [sanitize_text(f"torch 2.14.1 | python {minor} | cpu\n") for minor in ("3.11", "3.12", "3.13")]
    assert lines == ["torch 2.14.1 | python 3.x | cpu\n"] * 3
    assert sanitize_text("torch     2.14.1 | python 3.12 | cpu") == "torch     2.14.1 | python 3.x | cpu"
    assert sanitize_text("python 3.12: 3 graph breaks") == "python 3.12: 3 graph breaks"   # only that line's form


def test_user_line_numbers_are_kept():
    text = "File /work/main/src/compile_course/diagnostics.py:88 in explain, <notebook cell>:5, my_model.py:12"
    assert sanitize_text(text) == text


def test_sanitize_text_applies_the_rules_and_strips_ansi():
    raw = ("\x1b[0;31m<function f at 0x7f3a2b1c9d40>\x1b[0m\n"
           "  File /tmp/ipykernel_4242/3141592653.py:3 in f\n"
           "cache at /tmp/tmpab_c-12/inductor\n"
           "value 0x1f stays (too short to be an address)\n")
    assert sanitize_text(raw) == ("<function f at 0xADDRESS>\n"
                                  "  File <notebook cell>:3 in f\n"
                                  "cache at <tmpdir>/inductor\n"
                                  "value 0x1f stays (too short to be an address)\n")
    assert sanitize_text(sanitize_text(raw)) == sanitize_text(raw)  # idempotent


def test_sanitize_text_with_custom_rules(tmp_path):
    cfg = tmp_path / "rules.cfg"
    cfg.write_text("[pids]\nregex: pid \\d+\nreplace: pid N\n")
    assert sanitize_text("pid 1234 at 0x7fffabcdef", sanitize_rules(cfg)) == "pid N at 0x7fffabcdef"


def executed_notebook():
    nb = new_notebook()
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    nb.metadata["widgets"] = {"state": {}}
    cell = new_code_cell("print(f)", execution_count=1)
    cell.metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00Z"}
    cell.outputs = [
        new_output("stream", name="stdout", text="<function f at 0x7f3a2b1c9d40> in /tmp/ipykernel_1/2.py\n"),
        new_output("execute_result", data={"text/plain": "\x1b[1m/tmp/tmpxyz\x1b[0m"}, execution_count=1),
    ]
    err = new_code_cell("1/0", execution_count=2)
    err.metadata["tags"] = ["raises-exception"]
    err.outputs = [new_output("error", ename="ZeroDivisionError", evalue="division by zero at 0xdeadbeef00",
                              traceback=["\x1b[0;31mZeroDivisionError\x1b[0m at /tmp/ipykernel_9/9.py"])]
    nb.cells = [new_markdown_cell("# Title"), cell, err]
    return nb


def test_normalize_notebook_sanitizes_and_drops_volatile_metadata():
    nb = executed_notebook()
    assert len(audit_notebook(nb)) >= 3  # dirty before
    normalize_notebook(nb)
    assert nb.metadata.language_info == normalize.lab_metadata()["language_info"]  # as JupyterLab writes it
    assert "widgets" not in nb.metadata
    assert "execution" not in nb.cells[1].metadata
    assert nb.cells[1].outputs[0].text == "<function f at 0xADDRESS> in <notebook cell>\n"
    assert nb.cells[1].outputs[1].data["text/plain"] == "<tmpdir>"
    assert nb.cells[2].outputs[0].traceback == ["ZeroDivisionError at <notebook cell>"]
    assert nb.cells[2].outputs[0].evalue == "division by zero at 0xADDRESS"
    assert audit_notebook(nb) == []
    nbformat.validate(nb)


def clean_cell(source="print(1)", outputs=None, tags=None):
    cell = new_code_cell(source, execution_count=1)
    cell.outputs = outputs if outputs is not None else [new_output("stream", name="stdout", text="1\n")]
    if tags:
        cell.metadata["tags"] = tags
    return cell


def audit(*cells):
    nb = new_notebook()
    nb.cells = list(cells)
    return audit_notebook(nb)


def test_audit_accepts_a_clean_notebook():
    assert audit(new_markdown_cell("# t"), clean_cell(), clean_cell("", outputs=[])) == []


def test_audit_flags_stderr():
    problems = audit(clean_cell(outputs=[new_output("stream", name="stderr", text="W1129 warning\n")]))
    assert problems == ["cell 0: stderr output: 'W1129 warning\\n'"]


def test_audit_flags_unexpected_errors_but_accepts_tagged_ones():
    error = new_output("error", ename="RuntimeError", evalue="boom", traceback=["RuntimeError: boom"])
    assert audit(clean_cell(outputs=[error])) == ["cell 0: unexpected RuntimeError: boom"]
    assert audit(clean_cell(outputs=[error], tags=["raises-exception"])) == []


def test_audit_flags_ansi():
    problems = audit(clean_cell(outputs=[new_output("stream", name="stdout", text="\x1b[31mred\x1b[0m\n")]))
    assert problems == ["cell 0: ANSI escape codes in output"]


def test_audit_flags_unnormalized_addresses_and_temp_paths():
    for text in ("at 0x7f3a2b1c9d40\n", "File /tmp/ipykernel_12/34.py\n", "dir /tmp/tmpq1w2e3\n"):
        out = new_output("stream", name="stdout", text=text)
        assert audit(clean_cell(outputs=[out])) == ["cell 0: unnormalized volatile string in output"], text
    html = new_output("display_data", data={"text/html": "<b>0x7f3a2b1c9d40</b>", "text/plain": "ok"})
    assert audit(clean_cell(outputs=[html])) == ["cell 0: unnormalized volatile string in output"]


def test_audit_flags_unexecuted_cells():
    cell = new_code_cell("print(1)")  # execution_count None
    assert audit(new_markdown_cell("text"), cell) == ["cell 1: never executed (no stored output)"]


def test_audit_does_not_modify_the_notebook():
    nb = executed_notebook()
    before = nbformat.writes(nb)
    audit_notebook(nb)
    assert nbformat.writes(nb) == before


def test_inductor_kernels_compare_the_same_whatever_simd_width_was_picked():
    """Lesson 10's output_code log: the same machine printed AVX-512's step (16L) and, with the ISA probe
    failed under load, AVX2's (8L) in one make test run. The step and the tail split are masked, the
    tensor's own size is not."""
    def kernel(width: int, size: int = 8) -> str:
        return (f"for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>({size}L); "
                f"x0+=static_cast<int64_t>({width}L))\n"
                f"x0 < static_cast<int64_t>({width}L*(c10::div_floor_integer(static_cast<int64_t>(ks0), "
                f"static_cast<int64_t>({width}L))))\n"
                f"static_cast<int64_t>(ks0 + (-{width}L)*(c10::div_floor_integer(static_cast<int64_t>(ks0), "
                f"static_cast<int64_t>({width}L))))\n")

    assert sanitize_text(kernel(16)) == sanitize_text(kernel(8))
    assert sanitize_text(kernel(16, size=8)) != sanitize_text(kernel(16, size=16))
    assert "<simd width>" in sanitize_text(kernel(16)) and "(16L)" not in sanitize_text(kernel(16))


def test_a_guard_dump_compares_the_same_whatever_its_padding():
    """Torch pads every line of a guard dump to the column of its longest one, so an object id with other
    digits moves the padding of all of them (notebook 02 on Debian's Python 3.11.2); the guards stay."""
    def dump(object_id: int, column: int) -> str:
        type_match = f"+- TYPE_MATCH: ___check_type_id(L['args'], {object_id}), type=<class 'tuple'>"
        lines = [(type_match, "(HINT: type tuple)"),
                 ("+- LENGTH_CHECK: len(L['args']) == 1", ""),
                 ("+- DEFAULT_DEVICE: utils_device.CURRENT_DEVICE == None", "# _dynamo/output_graph.py:12 in init")]
        prefix = "V1204 10:00:00.000001 7 torch/_dynamo/guards.py:88] [0/0] [__guards] | "
        return "\n".join(f"{prefix}{guard.ljust(column)} {tail}" for guard, tail in lines)

    wide, narrow = dump(140234567890123, 90), dump(1402345678, 85)
    assert wide != narrow and sanitize_text(wide) == sanitize_text(narrow)
    assert "LENGTH_CHECK: len(L['args']) == 1\n" in sanitize_text(wide)
    assert sanitize_text(dump(1, 80)) != sanitize_text(dump(1, 80).replace("== 1", "== 2"))
    # only guard log lines: padding elsewhere (a table, a code listing) is kept
    assert sanitize_text("x = 1      # keep") == "x = 1      # keep"


def test_traceback_markers_and_the_graph_row_compare_the_same_on_3_11_and_3_13():
    """make test on 3.13.0: a user stack marks other lines with ~ and ^ than on 3.11, and the bytecode row that
    loads the captured graph moved its NULL; the frames, source lines and the row itself stay."""
    prefix = "VMMDD hh:mm:ss.us PID torch/_dynamo/symbolic_convert.py:N] [0/0] [__graph_breaks] "
    on_311 = (f'{prefix}  File "<notebook cell>", line 4, in f\n{prefix}    y = helper(x)\n'
              f"{prefix}        ~~~~~~^^^\n{prefix}  x = x * 2\n")
    on_313 = (f'{prefix}  File "<notebook cell>", line 4, in f\n{prefix}    y = helper(x)\n'
              f"{prefix}        ^^^^^^^^^\n{prefix}  x = x * 2\n{prefix}  ^^^^^^^^^\n")
    assert sanitize_text(on_311) == sanitize_text(on_313)
    assert "y = helper(x)" in sanitize_text(on_313) and "^" not in sanitize_text(on_313)
    assert sanitize_text(on_311) != sanitize_text(on_311.replace("helper(x)", "other(x)"))
    row = "P] [0/0] [__bytecode]  {}LOAD_GLOBAL    5 ({})"
    assert (sanitize_text(row.format("2 ", "NULL + __compiled_fn_5_<uuid>"))
            == sanitize_text(row.format("", "__compiled_fn_5_<uuid> + NULL")))
    assert "__compiled_fn_5" in sanitize_text(row.format("", "__compiled_fn_5_<uuid> + NULL"))


def test_nbval_reads_every_rule_as_normalize_does():
    """nbval finds a rule by 'regex: ...' followed by 'replace: ...' with something after it; a rule it skips
    (an empty replacement) would be applied when outputs are stored and never when they are compared."""
    from nbval.plugin import get_sanitize_patterns

    ours = [(pattern.pattern, replace) for pattern, replace in sanitize_rules()]
    assert get_sanitize_patterns(normalize.SANITIZE_FILE.read_text()) == ours
