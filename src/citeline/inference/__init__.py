"""Running ONNX models on the CPU: sessions and the cache of their optimised graphs."""
