"""The optional C extensions over the system's libjpeg-turbo (package libjpeg62-turbo-dev on
Debian and Ubuntu, libjpeg-turbo-devel on Fedora): the reader's crop decoder and the compiler's
lossless progressive-to-baseline transcoder (`fastpack build --baseline`). Both need
libjpeg-turbo 2.1.3 or later (earlier releases crash in the crop, skip and fast-upsampling paths
they use; the sources refuse to compile against them). Where they do not build (no compiler, no
headers, an older libjpeg-turbo) the install goes on without them: fastpack decodes with
simplejpeg and `--baseline` is refused. Everything else is configured in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "fastpack.reader.image._jpeg_crop",
            sources=["reader/image/_jpeg_crop.c"],
            libraries=["jpeg"],
            extra_compile_args=["-O2", "-std=c99"],
            optional=True,
        ),
        Extension(
            "fastpack.compiler.images._jpeg_baseline",
            sources=["compiler/images/_jpeg_baseline.c"],
            libraries=["jpeg"],
            extra_compile_args=["-O2", "-std=c99"],
            optional=True,
        ),
    ]
)
