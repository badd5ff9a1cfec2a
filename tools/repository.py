"""The book's repository, named once (a Sphinx extension).

``_config.yml`` gives the repository's address once, as ``repository.url`` (Jupyter Book hands
it to the theme as ``html_theme_options["repository_url"]``). This extension turns it into MyST
substitutions for the book's pages, so that no page repeats the address:

* ``{{ repository }}``: the address, as a link;
* ``{{ wheel }}``: the file name of the companion's wheel, which the site offers;
* ``{{ install_in_a_venv }}``: the commands that run a chapter in a fresh virtual environment,
  from the wheel and ``chapters.zip`` downloaded from the site;
* ``{{ install_in_colab }}``: the first cell that installs the companion in Google Colab, from
  the wheel uploaded there;
* ``{{ install_from_repository }}``: the command that installs it from the repository instead.

The companion library is the distribution ``transformers-formal-languages`` (the name
``companion`` on PyPI belongs to an unrelated package); it is imported as ``companion``.
"""

import re
from pathlib import Path

from downloads import CHAPTERS, wheel_name

DISTRIBUTION = "transformers-formal-languages"
REQUIREMENTS = Path(__file__).resolve().parents[1] / "requirements.txt"


def jupyterlab_pins() -> list[str]:
    """JupyterLab and jupyterlab-myst as requirements.txt pins them."""
    pins = re.findall(r"^(jupyterlab(?:-myst)?==\S+)", REQUIREMENTS.read_text(), re.M)
    if len(pins) != 2:
        raise ValueError(f"requirements.txt must pin jupyterlab and jupyterlab-myst, got {pins}")
    return pins


def substitutions(url: str, wheel: str, branch: str = "main") -> dict[str, str]:
    """The MyST substitutions for the commands that install the companion: from the site's own
    files (``wheel``, the wheel's file name, and ``chapters.zip``, which every page offers for
    download; ``tools/downloads.py``) or from the repository at ``url`` (a GitHub address)."""
    venv = "\n".join([
        "```bash",
        "python3 -m venv tfl && . tfl/bin/activate",
        "# without a CUDA GPU, PyTorch's CPU build is ten times smaller:",
        "pip install torch --index-url https://download.pytorch.org/whl/cpu",
        f"pip install ./{wheel} \\",
        f"    {' '.join(jupyterlab_pins())}",
        f"python3 -m zipfile -e {CHAPTERS} chapters",
        "jupyter lab chapters/recognizers.ipynb",
        "```"])
    colab = "\n".join([
        "```python",
        f"%pip install {wheel}",
        "```"])
    from_repository = "\n".join([
        "```bash",
        f"REPO={url}",
        f'pip install "{DISTRIBUTION} @ git+$REPO@{branch}"',
        "```"])
    return {"repository": f"<{url}>", "wheel": f"`{wheel}`", "install_in_a_venv": venv,
            "install_in_colab": colab, "install_from_repository": from_repository}


def add_substitutions(app, config) -> None:
    """Add the substitutions for the repository of ``_config.yml`` to MyST's."""
    options = config.html_theme_options
    url = options.get("repository_url", "").rstrip("/")
    if not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url) or url.endswith(".git") \
            or "executablebooks" in url:  # Jupyter Book's default is its own repository
        raise ValueError("_config.yml: repository.url must give the book's GitHub repository "
                         f"as https://github.com/OWNER/NAME, got {url!r}")
    config.myst_substitutions = {
        **config.myst_substitutions,
        **substitutions(url, wheel_name(), options.get("repository_branch", "main"))}


def setup(app):
    """Register the extension with Sphinx."""
    app.connect("config-inited", add_substitutions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
