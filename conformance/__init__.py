"""The certification in real torch.distributed process groups."""
