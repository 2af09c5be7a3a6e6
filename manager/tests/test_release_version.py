"""One release, four places that say it: CMake's project() (which the plugin writes in its
record), the wheel's pyproject.toml, ibqos.__version__ and debian/changelog. `apply` refuses an
OpenSM whose plugin's release is not ibqos's (docs/sm-hosts.md, "After an upgrade"), so a bump
in one place only would make every apply on a freshly restarted OpenSM refuse."""

from __future__ import annotations

import re
import tomllib

import ibqos
from ibqos.paths import REPO_ROOT


def test_the_plugin_the_wheel_the_cli_and_the_package_are_one_release():
    cmake = re.search(r"^project\(ibqos VERSION (\S+)", (REPO_ROOT / "CMakeLists.txt").read_text(), re.M)
    changelog = re.match(r"ibqos \(([^)-]+)", (REPO_ROOT / "debian" / "changelog").read_text())
    wheel = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert cmake and changelog
    assert {cmake.group(1), changelog.group(1), wheel} == {ibqos.__version__}
