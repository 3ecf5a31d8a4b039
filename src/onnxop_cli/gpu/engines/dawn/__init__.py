"""The Dawn engine (pydawn): engine.py has base.Engine's functions, objects.py the WebGPU objects."""
