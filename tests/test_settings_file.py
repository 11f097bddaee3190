"""A sidebar's choice is kept in the settings file, every other line as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui_agent.settings import load_settings
from tui_agent.settings_file import remember_setting


def test_a_choice_is_set_at_the_top_level_and_the_rest_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "tui-agent.toml"
    path.write_text('# my settings\nmodel = "local/smollm2"\nshow_inbox = true\n\n'
                    '[keymap]\n"app.help" = "f10"\n')
    remember_setting("show_inbox", False, path)
    remember_setting("show_state", False, path)
    assert path.read_text() == ('# my settings\nmodel = "local/smollm2"\nshow_inbox = false\n\n'
                                'show_state = false\n[keymap]\n"app.help" = "f10"\n')
    settings = load_settings(cwd=tmp_path)
    assert (settings.show_inbox, settings.show_state) == (False, False)
    assert settings.keymap == {"app.help": "f10"}


def test_without_a_settings_file_the_config_folders_is_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)
    written = remember_setting("show_state", False)
    assert written == tmp_path / "config" / "tui-agent" / "tui-agent.toml"
    assert load_settings(cwd=tmp_path).show_state is False


def test_a_name_that_is_not_a_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a settings key"):
        remember_setting("x = 1\n[evil]", True, tmp_path / "s.toml")
