"""compile_course.measurement as a package: its names, its test-API modules, and its old name kept for one release."""

import compile_course
from compile_course import measurement, primitives, testing
from compile_course.measurement import codec, graphs, records, run, spy


def test_the_package_exports_each_name_from_its_one_home():
    homes = (codec, graphs, records, run, spy)
    for name in measurement.__all__:
        owners = [m for m in homes if getattr(m, name, None) is getattr(measurement, name)]
        assert owners, name
        assert getattr(measurement, name).__module__ in measurement.MODULES, name


def test_the_old_module_re_exports_the_same_objects():
    for name in ("CallResult", "Run", "Break", "Timing", "ReplyError", "AnswerError", "to_data", "from_data",
                 "encode_tensor", "decode_tensor", "describe_arg", "make_spied_call", "upstream_gradient",
                 "guard_failures", "COMPILE_STATS", "MAX_CALLS", "MAX_COMPILES"):
        assert hasattr(primitives, name), name
    assert primitives.CallResult is records.CallResult and primitives.decode_tensor is codec.decode_tensor


def test_every_function_and_module_of_the_package_is_test_api():
    for value in (measurement, primitives, codec, spy, run.call_one, spy.Spy, records.CallResult,
                  primitives.describe_arg, codec.from_data):
        assert testing.is_test_api(value), value
    assert not testing.is_test_api(compile_course.diagnostics.guard_failures)


def test_the_package_does_not_shadow_the_lessons_measure_helper():
    # ``from compile_course import measure`` is the timing helper; a subpackage named ``measure`` would
    # replace it on the package as soon as anything imported the subpackage.
    from compile_course import measure
    from compile_course.timing import measure as timing_measure

    assert measure is timing_measure and callable(measure)
