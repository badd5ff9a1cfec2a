"""Device placement, checked without a GPU. PyTorch's ``meta`` device holds shapes but no
values, and most operations refuse to mix its tensors with CPU tensors as they refuse to mix
CUDA and CPU ones; so a function that creates a tensor on the CPU where it should follow its
input's device fails here as it would on a GPU (or returns its result on the wrong device)."""

import pytest
import torch

from companion import length_generalization, model, residual
from companion.recall import MODEL_NAMES, RecallModels, RecallTask
from companion.training import HEADS, Recognizer, logits_and_attention, token_types

META = torch.device("meta")


@pytest.mark.parametrize("language", ["parity", "first"])
def test_token_types_follow_the_strings_device(language):
    w = torch.randint(0, 2, (3, 5), generator=torch.Generator().manual_seed(0))
    on_cpu, on_meta = token_types(language, w), token_types(language, w.to(META))
    for cpu_part, meta_part in zip(on_cpu, on_meta, strict=True):
        assert meta_part.device == META
        assert meta_part.shape == cpu_part.shape and meta_part.dtype == cpu_part.dtype


@pytest.mark.parametrize("kind", ["plain", "residual"])  # layer_norm reads values: not on meta
def test_residual_statistics_follow_the_weights_device(kind):
    W = torch.randn(2, 3, 4, 4, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(0))
    on_cpu = residual.signal_and_gradient(W, kind, torch.Generator().manual_seed(1))
    on_meta = residual.signal_and_gradient(W.to(META), kind, torch.Generator().manual_seed(1))
    for cpu_part, meta_part in zip(on_cpu, on_meta, strict=True):
        assert meta_part.device == META and meta_part.shape == cpu_part.shape


@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_recall_losses_and_gradients_follow_the_models_device(alpha):
    # sentences come from the CPU; the models, their losses and gradients stay on theirs
    task = RecallTask(length=8, alpha=alpha)
    tokens, target = task.sample(4, torch.Generator().manual_seed(0))
    models = RecallModels(task, MODEL_NAMES, seeds=(0, 1), device=META)
    for loss in (models.losses(tokens, target), models.losses(tokens)):
        assert loss.device == META and loss.shape == (2 * len(MODEL_NAMES),)
    grads = torch.autograd.grad(models.losses(tokens, target).sum(), list(models.values))
    assert all(g.device == META for g in grads)


def _on_meta(module: torch.nn.Module) -> dict:
    return {name: value.detach().to(META) for name, value in module.named_parameters()}


@pytest.mark.parametrize("language", ["parity", "first"])
def test_the_trained_recognizers_forward_follows_its_parameters_device(language):
    w = torch.randint(0, 2, (3, 5), generator=torch.Generator().manual_seed(0))
    symbols, features, log_counts = token_types(language, w.to(META))
    outputs = logits_and_attention(_on_meta(Recognizer(language)), symbols, features.float(),
                                   log_counts.float(), torch.tensor(2.0, device=META),
                                   HEADS[language])
    assert all(out.device == META and out.shape == (3,) for out in outputs)


@pytest.mark.parametrize("task", sorted(length_generalization.TASKS))
def test_the_benchmarks_classifier_follows_its_parameters_device(task):
    tokens, _ = length_generalization.sample(task, 3, 7, torch.Generator().manual_seed(0))
    spec = length_generalization.TASKS[task]
    shape = length_generalization.config(task)
    params = {name: value[None] for name, value in
              _on_meta(length_generalization.Classifier(task)).items()}  # one stacked model
    tokens = length_generalization.with_output_token(tokens, spec.vocab).to(META)
    logits = model.stacked_logits(shape)(params, tokens[None],
                                         torch.tensor([2.0], device=META))
    assert logits.device == META and logits.shape == (1, 3, 8, spec.classes)
