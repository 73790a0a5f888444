"""Calibration (pure): turn measured nccl-tests output into a fitted fabric profile."""
