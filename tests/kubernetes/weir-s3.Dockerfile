# Weir's image with s3fs, for the tests of the chart's S3 values (the README's "build your
# image FROM Weir's"): built by tests/kubernetes_build.py FROM the image of
# deploy/kubernetes/Dockerfile, a small layer of its own. The versions are those Weir's
# `s3` extra resolves to beside the image's pinned packages.
ARG BASE
FROM ${BASE}

RUN pip install --no-cache-dir --constraint /opt/weir/constraints.txt \
        s3fs==2026.9.0 \
        aiobotocore==3.10.0 \
        aioitertools==0.13.0 \
        botocore==1.43.117 \
        jmespath==1.1.0 \
        python-dateutil==2.9.0.post0 \
        six==1.17.0 \
        wrapt==2.5.2 \
    && pip check
