// Closes the per-target region target_begin-inl.h opened (no include guard: once per pass).
HWY_AFTER_NAMESPACE();
