"""The SFT warm-up's loss skips the output layer over prompt positions: it must equal the model's
own loss on the response tokens, and train the same way."""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def tiny_llama():
    config = transformers.LlamaConfig(
        vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config)


def test_response_loss_equals_the_full_loss_and_its_gradients():
    from cobalt.train.sft import response_loss

    model = tiny_llama()
    # two right-padded rows whose responses start at 5 and 9
    rows = [(list(range(3, 15)), 5), (list(range(20, 30)), 9)]
    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.zeros((2, width), dtype=torch.long)
    labels = torch.full((2, width), -100)
    mask = torch.zeros((2, width), dtype=torch.long)
    for row, (ids, start) in enumerate(rows):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        labels[row, start : len(ids)] = torch.tensor(ids[start:])
        mask[row, : len(ids)] = 1

    full = model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
    full_grad = torch.autograd.grad(full, model.lm_head.weight)[0]
    trimmed = response_loss(model, input_ids, mask, labels, first=5)
    trimmed_grad = torch.autograd.grad(trimmed, model.lm_head.weight)[0]
    assert trimmed.item() == pytest.approx(full.item(), rel=1e-5)
    assert torch.allclose(trimmed_grad, full_grad, atol=1e-6)
