"""spyrec passes, one module per pass, named after it."""
