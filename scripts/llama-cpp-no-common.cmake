# Read right after llama.cpp's project() call when the install passes
# -DCMAKE_PROJECT_llama.cpp_INCLUDE=<this file> (README's install commands do).
# llama-cpp-python builds llama.cpp's common/ library (argument parsing, chat templates, an
# HTTP client) with FORCE, though its Python package loads only libllama and libggml*. A
# normal variable shadows that cache entry, so common/ is neither configured nor compiled:
# the install compiles 83 files instead of 140, 5-6 minutes instead of 13 on two cores.
set(LLAMA_BUILD_COMMON OFF)
