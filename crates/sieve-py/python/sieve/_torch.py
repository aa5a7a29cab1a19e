"""Token bitmasks as torch tensors: allocated as serving engines expect them, applied by torch's
own kernels on any device and in any float type."""

import torch


def allocate_token_bitmask(batch, width):
    """An int32 bitmask of ``batch`` rows in CPU memory, every token allowed (a row left
    unfilled constrains nothing)."""
    return torch.full((batch, (width + 31) // 32), -1, dtype=torch.int32)


def apply_token_bitmask_inplace(logits, bitmask, indices=None):
    """As :func:`sieve.apply_token_bitmask_inplace`, for a torch tensor of logits."""
    rows = logits.unsqueeze(0) if logits.dim() == 1 else logits
    masks = torch.as_tensor(bitmask)
    masks = masks.unsqueeze(0) if masks.dim() == 1 else masks
    if indices is not None:
        if len(indices) != rows.shape[0]:
            raise ValueError(f"{rows.shape[0]} rows of logits and {len(indices)} indices")
        masks = masks[torch.as_tensor(list(indices), dtype=torch.long)]
    elif masks.shape[0] < rows.shape[0]:
        raise ValueError(f"{rows.shape[0]} rows of logits and {masks.shape[0]} bitmask rows")
    else:
        masks = masks[: rows.shape[0]]
    masks = masks.to(device=rows.device, dtype=torch.int32, non_blocking=True)
    shifts = torch.arange(32, device=rows.device, dtype=torch.int32)
    allowed = ((masks.unsqueeze(-1) >> shifts) & 1).to(torch.bool).flatten(1)
    width = min(rows.shape[-1], allowed.shape[-1])
    rows[:, :width].masked_fill_(~allowed[:, :width], float("-inf"))
    rows[:, width:].fill_(float("-inf"))
