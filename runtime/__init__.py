"""spyrec runtime: the Spyre emulator (which runs .spyre files) and the KTIR interpreter."""
