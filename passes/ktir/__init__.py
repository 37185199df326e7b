"""Kernels as KTIR: conversion from spyre kernels (convert-spyre-to-ktir), memory placement
(spyre-place-memory) and the legalization of hand-written KTIR (spyre-legalize-ktir), with
their builders and the bounds proof (docs/layers/ktir.md)."""
