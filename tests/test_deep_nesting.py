"""Deeply nested JSON, YAML and TOML in a user's file is one error line naming the file, never a RecursionError
traceback: through the real CLI for a Studio config, a Studio corpus and byo data, and through each reader of a
user's file that parses JSON, YAML or TOML."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.errors import OmnivchatError

runner = CliRunner()
DEPTH = 100_000  # far past Python's recursion limit

DEEP_JSON = "[" * DEPTH + "]" * DEPTH
DEEP_YAML = "[" * DEPTH + "]" * DEPTH
DEEP_TOML = "a = " + "[" * DEPTH + "]" * DEPTH + "\n"


def one_error_line(result, path: Path) -> str:
    assert result.exit_code == 2, result.output
    assert not isinstance(result.exception, RecursionError) and "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and str(path.name) in lines[0], result.output
    return lines[0]


def test_studio_config_nested_too_deeply(tmp_path: Path) -> None:
    config = tmp_path / "deep.yaml"
    config.write_text(DEEP_YAML)
    result = runner.invoke(app, ["studio", "run", "-o", str(tmp_path / "b"), "--n", "1", "--config", str(config)])
    assert "nested too deeply" in one_error_line(result, config)


def test_studio_corpus_nested_too_deeply(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(DEEP_JSON + "\n")
    args = ["studio", "run", "-o", str(tmp_path / "b"), "--n", "1", "--config", "SVMR", "--corpus", str(corpus)]
    line = one_error_line(runner.invoke(app, args), corpus)
    assert f"{corpus}:1" in line and "nested too deeply" in line


def test_byo_data_nested_too_deeply(tmp_path: Path) -> None:
    data = tmp_path / "bench.json"
    data.write_text(DEEP_JSON)
    args = ["eval", "--benchmark", "byo", "--data", str(data), "--model", "sim:healthy", "-o", str(tmp_path / "r")]
    assert "nested too deeply" in one_error_line(runner.invoke(app, args), data)


def _scene(path: Path) -> None:
    from omnivchat.synth import load_spec

    load_spec(path)


def _agents(path: Path) -> None:
    from omnivchat.studio.hosted._agents import load_agents_file

    load_agents_file(path)


def _eval_index(path: Path) -> None:
    from omnivchat.rl.curves import read_eval_index

    read_eval_index(path)


def _card(path: Path) -> None:
    from omnivchat.benchmarks._tables import _readme_configs

    _readme_configs(path.parent)


@pytest.mark.parametrize(
    ("reader", "name", "text"),
    [
        (_scene, "scene.yaml", DEEP_YAML),
        (_scene, "broken.yaml", "a: [1, 2\n"),  # plain bad YAML was a yaml traceback too
        (_agents, "agents.toml", DEEP_TOML),
        (_eval_index, "index.toml", DEEP_TOML),
        (_card, "README.md", "---\n" + DEEP_YAML + "\n---\n"),
    ],
)
def test_every_reader_names_the_file(tmp_path: Path, reader, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(OmnivchatError) as caught:
        reader(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)
