"""Compiling user C++/CUDA into a loaded extension. Imports nothing of gpubench but the base
modules. One module per part, from the request to the loaded module:

  sources      BuildRequest, and the sources and headers of one build, read once
  declarations just enough C++ reading: exported declarations, includes, comments
  layout       the translation units: the binding apart from pybind11's module definition
  nvml         what NVML says of every GPU, without starting CUDA (the key's arch, the GPU count)
  key          the content key (published folder) and the stable key (work folder, module)
  diagnostics  CompileError, `#line` directives, compiler output as file:line errors
  cache        the cache folders, the builders' flock, publishing and loading a finished build
  workfolder   ninja's work folder kept never stale, never stuck; paths ninja takes literally
  flags        the flags gpubench adds to torch's command lines
  pch          a precompiled header, made beside a build and checked; torch_pch ties it to torch
               and decides when a build waits for it
  compile      build_extension: the whole build, from request to imported module
  bytecode     Python's own bytecode under gpubench's cache where the environment turned
               writing it off (torch's import, twice as fast in every gpubench process)
"""
