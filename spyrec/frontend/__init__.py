"""Frontend: torch.export programs into the spyre graph dialect."""
