import pytest
import torch

from companion import runtime


@pytest.mark.parametrize("cuda, expected", [(True, "cuda"), (False, "cpu")])
def test_device_defaults_to_cuda_when_present(monkeypatch, cuda, expected):
    monkeypatch.delenv("COMPANION_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    assert runtime.device() == torch.device(expected)
    monkeypatch.setenv("COMPANION_DEVICE", "cuda")
    if cuda:
        assert runtime.device() == torch.device("cuda")
    else:
        with pytest.raises(ValueError, match="none is available"):
            runtime.device()


def test_device_override_and_bad_override(monkeypatch):
    monkeypatch.setenv("COMPANION_DEVICE", "cpu")
    assert runtime.device() == torch.device("cpu")
    monkeypatch.setenv("COMPANION_DEVICE", "tpu-please")
    with pytest.raises(ValueError, match="COMPANION_DEVICE"):
        runtime.device()


def test_scale_follows_environment(monkeypatch):
    monkeypatch.setenv("COMPANION_DEVICE", "cpu")
    monkeypatch.delenv("BOOK_SCALE", raising=False)
    assert runtime.scale() == "quick"
    monkeypatch.setenv("BOOK_SCALE", "full")
    assert runtime.scale() == "full"
    monkeypatch.setenv("BOOK_SCALE", "huge")
    with pytest.raises(ValueError, match="BOOK_SCALE"):
        runtime.scale()


def test_set_seed_makes_draws_repeat():
    generator = runtime.set_seed(7)
    first = (torch.rand(3), torch.rand(3, generator=generator))
    generator = runtime.set_seed(7)
    second = (torch.rand(3), torch.rand(3, generator=generator))
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])
    runtime.set_seed(8)
    assert not torch.equal(torch.rand(3), first[0])


@pytest.mark.parametrize("seed, error", [(1.5, TypeError), (True, TypeError), (-1, ValueError)])
def test_set_seed_rejects_bad_seeds(seed, error):
    with pytest.raises(error, match="seed"):
        runtime.set_seed(seed)


def test_book_seed_shifts_every_seed_and_keeps_them_distinct(monkeypatch):
    monkeypatch.delenv("BOOK_SEED", raising=False)
    assert runtime.effective_seed(5) == 5
    default = torch.rand(4, generator=runtime.set_seed(5))
    monkeypatch.setenv("BOOK_SEED", "3")
    shifted = [runtime.effective_seed(s) for s in range(10)]
    assert len(set(shifted)) == 10 and 5 not in shifted
    other = torch.rand(4, generator=runtime.set_seed(5))
    assert not torch.equal(default, other)
    assert torch.equal(torch.rand(4, generator=runtime.generator(5)), other)
    monkeypatch.setenv("BOOK_SEED", "three")
    with pytest.raises(ValueError, match="BOOK_SEED"):
        runtime.set_seed(5)


def test_describe_device_names_the_kind_of_device():
    text = runtime.describe_device(torch.device("cpu"))
    assert text.startswith("cpu (") and "threads" in text


def test_describe_profile_fits_the_page_and_names_every_size():
    sizes = {f"size_{i}": 10**i for i in range(12)}
    text = runtime.describe_profile(sizes, torch.device("cpu"))
    lines = text.splitlines()
    assert lines[0].startswith(f"profile {runtime.scale()} on cpu")
    assert all(len(line) <= 79 for line in lines[1:])
    for name, value in sizes.items():
        assert f"{name}={value}," in " ".join(lines[1:]) + ","


def test_describe_profile_refuses_a_non_dict():
    with pytest.raises(TypeError, match="sizes must be a dict"):
        runtime.describe_profile([("batch", 10)])



@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_set_seed_computes_on_one_thread_unless_told(monkeypatch, restore_threads):
    torch.set_num_threads(2)
    monkeypatch.delenv("COMPANION_THREADS", raising=False)
    runtime.set_seed(0)
    assert torch.get_num_threads() == runtime.threads() == 1
    monkeypatch.setenv("COMPANION_THREADS", "3")
    runtime.set_seed(0)
    assert torch.get_num_threads() == 3
    monkeypatch.setenv("COMPANION_THREADS", "")  # set but empty: as if unset
    runtime.set_seed(0)
    assert torch.get_num_threads() == 1
    for bad in ("0", "-2", "two", "1.5"):
        monkeypatch.setenv("COMPANION_THREADS", bad)
        with pytest.raises(ValueError, match="COMPANION_THREADS"):
            runtime.set_seed(0)
