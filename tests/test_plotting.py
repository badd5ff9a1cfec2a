"""The figures draw the data they are given: checked on the artists matplotlib holds."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from companion import plotting
from companion.plotting import plot_accuracy_by_length, plot_attention, plot_loss_curves


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_loss_curves_draw_the_seed_mean_with_a_band_and_keep_styles():
    steps = [0, 10, 20]
    # two seeds of model "a", one of model "b"; the Bayes loss 0.5 is subtracted
    losses = torch.tensor([[1.5, 2.5, 0.9],
                           [0.7, 0.9, 0.6],
                           [0.5, 0.5, 0.5]], dtype=torch.float64)
    styles = {"a": {"color": "red", "linestyle": "--"}, "b": {"color": "blue"}}
    ax = plot_loss_curves(steps, losses, ["a", "a", "b"], target=0.5, styles=styles)
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert sorted(lines) == ["a", "b"]
    np.testing.assert_allclose(lines["a"].get_ydata(), [1.5, 0.3, 1e-8])  # mean - 0.5, floored
    np.testing.assert_allclose(lines["b"].get_ydata(), [0.4, 0.1, 1e-8])
    assert lines["a"].get_color() == "red" and lines["a"].get_linestyle() == "--"
    assert lines["b"].get_color() == "blue"
    (band,) = ax.collections  # only "a" has several seeds
    corners = band.get_paths()[0].vertices
    assert corners[:, 1].max() == pytest.approx(2.0)  # max over seeds at step 0
    assert ax.get_yscale() == "log" and "Bayes" in ax.get_ylabel()


def test_attention_heat_map_prints_every_weight():
    A = torch.tensor([[1.0, 0.0], [0.25, 0.75]])
    ax = plot_attention(A, labels=["x", "y"], decimals=2)
    assert [t.get_text() for t in ax.texts] == ["1.00", "0.00", "0.25", "0.75"]
    np.testing.assert_array_equal(ax.images[0].get_array(), A.numpy())
    with pytest.raises(ValueError, match="A must have rank 2"):
        plot_attention(torch.ones(3))


def test_accuracy_by_length_sorts_lengths():
    ax = plot_accuracy_by_length({"model": {100: 0.5, 10: 1.0, 1000: 0.75}})
    (line,) = [line for line in ax.get_lines() if line.get_label() == "model"]
    np.testing.assert_array_equal(line.get_xdata(), [10, 100, 1000])
    np.testing.assert_array_equal(line.get_ydata(), [1.0, 0.5, 0.75])
    assert ax.get_xscale() == "log"


def test_steps_precision_plots_step_j_on_a_linear_axis_with_its_marks():
    right = torch.ones(60)
    right[50:] = 0.5
    every, near = plotting.plot_steps_precision(right, {"bound": 20, "2^5": 32}, (45, 55))
    assert [every.get_title(), near.get_title()] == ["every step", "near the first error"]
    assert every.get_xscale() == near.get_xscale() == "linear"
    (curve, *marks) = every.get_lines()
    np.testing.assert_array_equal(curve.get_xdata(), np.arange(60))
    np.testing.assert_array_equal(curve.get_ydata(), right.numpy())
    assert [(line.get_xdata()[0], line.get_label()) for line in marks] == [
        (20, "bound (20)"), (32, "2^5 (32)")]
    (zoomed,) = near.get_lines()
    np.testing.assert_array_equal(zoomed.get_xdata(), np.arange(45, 56))
    np.testing.assert_array_equal(zoomed.get_ydata(), [1.0] * 5 + [0.5] * 6)
    for zoom in ((5, 5), (50, 60), [1, 2]):
        with pytest.raises(ValueError, match="zoom"):
            plotting.plot_steps_precision(right, {}, zoom)
    with pytest.raises(TypeError, match="marks"):
        plotting.plot_steps_precision(right, {"bound": 2.5}, (1, 2))
    plt.close("all")


def test_cross_entropy_and_weight_sensitivity_figures_draw_their_data():
    ns = [10, 100, 1000]
    ax = plotting.plot_cross_entropy_by_length(
        ns, {"no layer norm": [0.9, 0.99, 1.0], "eps = 0": [0.05, 0.05, 0.05]}, log_x=True)
    lines = {line.get_label(): line for line in ax.get_lines() if not line.get_label()
             .startswith("_")}
    np.testing.assert_allclose(lines["eps = 0"].get_ydata(), [0.05] * 3)
    assert lines["no layer norm"].get_color() == "C3" and ax.get_xscale() == "log"
    looks = {(line.get_linestyle(), line.get_marker()) for line in lines.values()}
    assert len(looks) == len(lines)  # a curve lying on another stays visible
    axes = plotting.plot_weight_sensitivity([0.99, 1.0, 1.01], [2.0, 0.05, 2.0],
                                            [0.5, 1.0, 0.5], "w")
    np.testing.assert_allclose(axes[0].get_lines()[0].get_ydata(), [2.0, 0.05, 2.0])
    np.testing.assert_allclose(axes[1].get_lines()[0].get_ydata(), [0.5, 1.0, 0.5])
    assert axes[1].get_xlabel() == "w"


def test_norms_by_depth_draws_means_bands_and_closed_forms():
    values = torch.tensor([[1.0, 2.0, 4.0], [1.0, 4.0, 8.0]], dtype=torch.float64)
    ax = plotting.plot_norms_by_depth({"residual": values}, "signal", {"2^L": [1.0, 2.0, 4.0]})
    lines = {line.get_label(): line for line in ax.get_lines()}
    np.testing.assert_allclose(lines["residual"].get_ydata(), [1.0, 3.0, 6.0])
    np.testing.assert_allclose(lines["2^L"].get_ydata(), [1.0, 2.0, 4.0])
    assert lines["2^L"].get_linestyle() == "--"
    assert ax.get_yscale() == "log" and len(ax.collections) == 1  # the band


def test_local_stretch_plot_is_log_log_with_a_curve_per_eps():
    ax = plotting.plot_local_stretch([1e-3, 1e-2], {"eps = 0": torch.tensor([1e3, 1e2]),
                                                    "eps = 0.01": torch.tensor([10.0, 7.0])})
    lines = {line.get_label(): line for line in ax.get_lines()}
    np.testing.assert_allclose(lines["eps = 0.01"].get_ydata(), [10.0, 7.0])
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"


def test_training_curves_draw_each_length_mean_per_variant():
    from companion.training import Grid, TrainingLog

    grid = Grid("first", (3, 5), runs=2)
    metric = torch.arange(len(grid) * 4, dtype=torch.float64).reshape(len(grid), 4) / 100
    log = TrainingLog(grid, 50, metric, metric, metric, metric, parameters={})
    axes = plotting.plot_training_curves(log)
    assert axes.shape == (3, 2)
    for column, variant in enumerate(grid.variants):
        lines = {line.get_label(): line for line in axes[1][column].get_lines()}
        for m in (3, 5):
            expected = log.select("accuracy", m, variant).mean(dim=0)
            np.testing.assert_allclose(lines[f"trained on $m = {m}$"].get_ydata(), expected)
    names = ("cross-entropy", "accuracy", "attention to first symbol")
    for row, name in zip(axes, names, strict=True):  # every panel names its quantity and
        # variant; the panels of one quantity share their y-range
        assert [ax.get_title() for ax in row] == [f"{name}, {variant} attention"
                                                  for variant in grid.variants]
        assert row[0].get_ylim() == row[1].get_ylim()
        assert all(ax.xaxis.get_tick_params()["labelbottom"] for ax in row)


def test_length_generalization_draws_each_variants_mean_and_chance():
    from companion.length_generalization import Benchmark

    accuracy = torch.rand(3, 2, 4, generator=torch.Generator().manual_seed(0))
    results = [Benchmark(task, [0, 1, 2], ("standard", "scaled"), [10, 40, 100, 500], 40,
                         accuracy) for task in ("even_pairs", "cycle_navigation", "parity_check")]
    axes = plotting.plot_length_generalization(results)
    assert len(axes) == 3
    lines = {line.get_label(): line for line in axes[1].get_lines()}
    np.testing.assert_allclose(lines["scaled"].get_ydata(), accuracy[:, 1].mean(dim=0))
    levels = [line.get_ydata()[0] for line in axes[1].get_lines() if line.get_linestyle() == ":"]
    assert levels == [0.2]  # cycle navigation: five classes
    assert axes[1].get_title() == "cycle navigation"
    for ax in axes:  # each panel readable alone, as on a phone: its own labels and ticks
        assert ax.get_xlabel() == "string length" and ax.get_ylabel() == "accuracy"
        assert all(label.get_visible() for label in ax.get_yticklabels())
    [alone] = plotting.plot_length_generalization(results[:1])
    assert len(alone.figure.axes) == 1  # no empty panel beside a single task


def test_generalization_draws_each_task_styled_by_its_prediction():
    from companion.generalization import ENCODINGS, TASKS, Result, predicted

    tasks = list(TASKS)
    accuracy = torch.rand(len(tasks), 2, 3, 3, generator=torch.Generator().manual_seed(0))
    result = Result(tasks, list(ENCODINGS), [0, 1, 2], [(13, 24), (25, 36)], accuracy, None, {})
    axes = plotting.plot_generalization(result)
    assert [ax.get_title() for ax in axes] == ["no positions (NoPE)", "learned positions (APE)"]
    for j, (ax, encoding) in enumerate(zip(axes, ENCODINGS, strict=True)):
        lines = {line.get_label(): line for line in ax.get_lines()}
        for i, task in enumerate(tasks):
            line = lines[task.replace("_", " ")]
            np.testing.assert_allclose(line.get_ydata(), accuracy[i, j].double().mean(dim=0))
            assert line.get_linestyle() == ("-" if predicted(task, encoding) else "--")
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1–12", "13–24", "25–36"]
        assert ax.get_legend() is not None and ax.get_ylabel()
    with pytest.raises(TypeError, match="result must be a Result"):
        plotting.plot_generalization({})


def _shown(figure) -> dict:
    """The MIME bundle plotting.show displays for ``figure``."""
    from unittest import mock
    bundles = []
    with mock.patch("IPython.display.display", lambda bundle, raw: bundles.append(bundle)):
        plotting.show(figure)
    [bundle] = bundles
    return bundle


def test_show_makes_one_legible_svg_per_panel_and_a_pdf_of_the_whole():
    import base64
    import re
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3), layout="constrained")
    left.plot([0, 1], [0, 1])
    left.set_title("left panel")
    left.legend(["a line"], fontsize=7.5)
    image = right.imshow(np.eye(3))
    fig.colorbar(image, ax=right)  # a color bar stays with its panel
    bundle = _shown(fig)
    images = re.findall(r'<img src="data:image/svg\+xml;base64,([^"]+)" alt="([^"]*)" '
                        r'width="(\d+)" height="\d+" data-font-pt="([\d.]+)" '
                        r'style="flex: 1 1 (\d+)px; min-width: \d+px; max-width: (\d+)px',
                        bundle["text/html"])
    assert [alt for _, alt, *_ in images] == ["left panel", "a panel"]
    for svg, _, width, points, narrowest, widest in images:
        svg = base64.b64decode(svg).decode()
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg
        # no wider than its half of the figure (96 px per inch), and never shown so narrow
        # that its smallest text falls under 10 CSS pixels
        assert int(width) == int(widest) <= 4 * 96 + 8
        assert float(points) * 96 / 72 * int(narrowest) / int(width) >= 10 - 0.05
    assert [float(points) for *_, points, _, _ in images][0] == 7.5  # the legend's size
    assert base64.b64decode(bundle["application/pdf"]).startswith(b"%PDF")
    assert not plt.get_fignums(), "show() closes the figure it displayed"


def test_show_accepts_the_axes_a_plotting_function_returns_and_refuses_figure_legends():
    ax = plot_accuracy_by_length({"a": {10: 1.0, 100: 0.5}})
    assert _shown(ax)["text/html"].count("<img ") == 1
    fig, axes = plt.subplots(1, 2)
    fig.legend(["x"])
    with pytest.raises(ValueError, match="legend or title"):
        plotting.show(axes)
    with pytest.raises(TypeError, match="Figure or Axes"):
        plotting.show("a figure")


def test_a_figure_recorded_from_an_executed_notebook_is_shown_again_as_it_was(
        tmp_path, cache_executed):
    import json
    from unittest import mock

    from full_figures import record  # tools/, on pytest's pythonpath
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    shown = _shown(fig)
    figure_cell = {"cell_type": "code", "metadata": {"mystnb": {"figure": {
        "name": "fig-precision"}}}, "source": "show(fig)", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": "a line printed first\n"},
        {"output_type": "display_data", "metadata": {}, "data": shown}]}
    executed = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "# A"},
                          figure_cell]}
    (tmp_path / "exact_solutions.ipynb").write_text(json.dumps(executed))
    assert record(tmp_path, tmp_path / "out") == [tmp_path / "out" / "fig-precision.json"]
    again = []
    with mock.patch("IPython.display.display", lambda bundle, raw: again.append(bundle)):
        plotting.show_recorded(tmp_path / "out" / "fig-precision.json")
    assert again == [shown]

    # from Jupyter Book's execution cache, matched by the chapter's code
    import nbformat
    cache, committed = cache_executed(executed, "exact_solutions.ipynb")
    book = tmp_path / "book"
    book.mkdir()
    nbformat.write(committed, book / "exact_solutions.ipynb")
    (tmp_path / "out" / "fig-precision.json").unlink()
    assert record(cache, tmp_path / "out", book) == [tmp_path / "out" / "fig-precision.json"]
    assert json.loads((tmp_path / "out" / "fig-precision.json").read_text()) == shown
    committed.cells[1].source = "show(other_fig)"  # code the cache never executed
    nbformat.write(committed, book / "exact_solutions.ipynb")
    assert record(cache, tmp_path / "out", book) == []

    figure_cell["outputs"] = []  # a chapter that was not executed
    (tmp_path / "exact_solutions.ipynb").write_text(json.dumps(executed))
    with pytest.raises(ValueError, match="executed"):
        record(tmp_path, tmp_path / "out")
    (tmp_path / "not_a_figure.json").write_text('{"text/plain": "1"}')
    with pytest.raises(ValueError, match="path must hold a figure bundle"):
        plotting.show_recorded(tmp_path / "not_a_figure.json")


def test_sensitivity_and_sharpness_figures_draw_their_data():
    ax = plotting.plot_sensitivity([2, 4, 8], {"PARITY": [2, 4, 8], "random": [0.5, 0.7, 0.6]})
    lines = {line.get_label(): line for line in ax.get_lines()}
    np.testing.assert_allclose(lines["random"].get_ydata(), [0.5, 0.7, 0.6])
    np.testing.assert_allclose(lines[r"$\sqrt{n}$"].get_ydata()[-1], np.sqrt(8))
    np.testing.assert_allclose(lines["$n$"].get_ydata()[[0, -1]], [2, 8])
    panels = {"sharpness": {"parity": [0.1, float("nan")], "first": [0.0, 0.0]},
              "norm": {"parity": [16.0, 17.0], "first": [16.0, 16.0]}}
    axes = plotting.plot_sharpness([3, 4], panels)
    assert [ax.get_ylabel() for ax in axes] == ["sharpness", "norm"]
    np.testing.assert_allclose(axes[1].get_lines()[0].get_ydata(), [16.0, 17.0])
    assert np.isnan(axes[0].get_lines()[0].get_ydata()[1])
    with pytest.raises(ValueError, match="one entry per point"):
        plotting.plot_sharpness([3, 4], {"norm": {"parity": [1.0]}})
    with pytest.raises(TypeError, match="panels"):
        plotting.plot_sharpness([3, 4], {})
    plt.close("all")


def test_circuit_reads_draws_one_row_per_gate():
    from companion import circuits, steps

    circuit = circuits.xor_circuit()
    reads = steps.circuit_attention(steps.compile_circuit(circuit), "10").sum(0)
    ax = plotting.plot_circuit_reads(reads, circuit)
    assert [label.get_text() for label in ax.get_yticklabels()][0] == "$g_{0}$ OR"
    assert len(ax.get_xticklabels()) == circuit.n_nodes
    with pytest.raises(ValueError, match="reads"):
        plotting.plot_circuit_reads(reads[:, :3], circuit)
    with pytest.raises(TypeError, match="circuit"):
        plotting.plot_circuit_reads(reads, "xor")
    plt.close("all")


def test_tm_attention_draws_a_row_per_move():
    from companion import steps

    machine = steps.compile_tm(*steps.TM_EXAMPLES["increment"])
    table = steps.tm_attention(machine, "110")
    ax = plotting.plot_tm_attention(table)
    assert ax.images[0].get_array().shape == table.shape
    with pytest.raises(TypeError, match="table"):
        plotting.plot_tm_attention(table.to_numpy())
    plt.close("all")
