from pathlib import Path

import pytest

from gpubench.errors import ConfigError
from gpubench.run.config import load_config

REPO = Path(__file__).resolve().parent.parent


def write(tmp_path, text: str) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(text)
    return path


def test_shipped_configs_load():
    for path in (REPO / "configs").glob("*.toml"):
        config = load_config(path)
        assert config.families, path


def test_values_are_converted_to_settings(tmp_path):
    (tmp_path / "mine").mkdir()
    config = load_config(write(tmp_path, """
families = ["matmul"]
dtypes = ["bf16", "fp32"]
sizes = [1024, "2^12"]
kernels_dirs = ["mine"]
seed = 7
[timing]
warmup_ms = 25
min_time_ms = 20
max_time_ms = 250
target_ci_pct = 1.5
min_samples = 9
modes = ["cold", "wall"]
remeasure_throttled = true
timeout_s = 30
"""))
    assert config.families == ("matmul",)
    assert config.dtypes == ("bfloat16", "float32")
    assert config.shapes.sizes == (1024, 4096)
    assert config.kernels_dirs == ((tmp_path / "mine").resolve(),)
    assert config.seed == 7
    assert config.timing.warmup_s == 0.025 and config.timing.max_time_s == 0.25
    assert config.timing.min_time_s == 0.02 and config.timing.target_rel_ci == 0.015
    assert config.timing.min_samples == 9
    assert config.timing.modes == ("cold", "wall") and config.timing.remeasure_throttled is True
    assert config.timing.timeout_s == 30


def test_per_family_sizes(tmp_path):
    config = load_config(write(tmp_path, '[sizes]\nsquare = ["2^20"]\nmatmul = [256]\n'))
    assert config.shapes_for("square").sizes == (1 << 20,)
    assert config.shapes_for("matmul").sizes == (256,)
    assert not config.shapes_for("vector_add")  # the family's defaults


@pytest.mark.parametrize("text, key", [
    ("familes = ['square']", "familes"),
    ("[timing]\nwarmpu_ms = 10", "timing.warmpu_ms"),
])
def test_unknown_keys_name_file_and_key_with_a_suggestion(tmp_path, text, key):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message and f"'{key}'" in message and "did you mean" in message


@pytest.mark.parametrize("text, key", [
    ("[timing]\nwarmup_ms = -1", "timing.warmup_ms"),
    ("[timing]\nmin_samples = 2.5", "timing.min_samples"),
    ("[timing]\nremeasure_throttled = 'yes'", "timing.remeasure_throttled"),
    ("[timing]\nmodes = ['hot']", "timing.modes"),
    ("sizes = [0]", "sizes"),
    ("[sizes]\nsquare = ['abc']", "sizes.square"),
    ("dtypes = ['fp8']", "dtypes"),
    ("families = 'square'", "families"),
])
def test_bad_values_name_file_and_key(tmp_path, text, key):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=f"key '{key}'"):
        load_config(path)


def test_malformed_toml_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "families = [square"))


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "nope.toml")
