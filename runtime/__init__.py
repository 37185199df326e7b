"""spyrec runtime: the .spyre container, the Spyre emulator and the KTIR interpreter."""
