import pytest

from gpubench.errors import UsageError
from gpubench.parsing import format_size, parse_dtypes, parse_size, parse_sizes, split_names


@pytest.mark.parametrize("text, value", [("4096", 4096), ("2^20", 1 << 20), ("2**10", 1024),
                                         (" 16_777_216 ", 1 << 24), ("+7", 7)])
def test_sizes_accept_integers_and_powers(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["0", "-5", "abc", "1.5", "1e6", "2^", "2^99", ""])
def test_bad_sizes_are_usage_errors_naming_the_value(text):
    with pytest.raises(UsageError, match="invalid size"):
        parse_size(text)


def test_size_lists_keep_order_and_drop_duplicates():
    assert parse_sizes("4096,1024,4096") == (4096, 1024)
    assert parse_sizes([1024, "2^11"]) == (1024, 2048)


@pytest.mark.parametrize("text", ["", "1,,2", ","])
def test_empty_size_lists_are_rejected(text):
    with pytest.raises(UsageError):
        parse_sizes(text)


def test_dtype_aliases_map_to_torch_names():
    assert parse_dtypes("fp32,bf16,half,torch.float16") == ("float32", "bfloat16", "float16")


def test_unknown_dtype_suggests_close_names():
    with pytest.raises(UsageError, match="did you mean"):
        parse_dtypes("fp61")


def test_split_names_accepts_repeats_and_commas():
    assert split_names(("a,b", "c", "a")) == ("a", "b", "c")


def test_powers_of_two_print_as_powers():
    assert format_size(1 << 24) == "2^24"
    assert format_size(1000) == "1000"
    assert format_size(512) == "512"
