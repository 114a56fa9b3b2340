#!/usr/bin/env python3
"""An S3-compatible server (moto) for sluice's tests, and the few client calls they check with.

    python3 s3.py serve
        Starts moto's S3 on 127.0.0.1, on a port the system picks. Once it has answered a
        request, prints one line on stdout, `READY http://127.0.0.1:PORT`, and nothing else ever.
        Runs until its stdin reaches end of file (the test closed it, or the test process died),
        then exits at once. If moto is not installed it prints `MISSING moto` and exits 3.

    python3 s3.py sigv4 METHOD URL REGION
        The SigV4 signature botocore computes for a request to URL (its query sent as it
        stands), with the headers given on stdin as a JSON object (those the request signed,
        `x-amz-date` among them, whose time it is signed at), for S3 in REGION with the
        credentials of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY. Prints the hex signature.

    python3 s3.py ENDPOINT COMMAND ARGS...
        One client call through boto3 with path-style requests, credentials from the usual
        AWS_* variables. Commands:
          create-bucket BUCKET
          put-object BUCKET KEY               (stdin's bytes become the object)
          put-object-multipart BUCKET KEY PART_SIZE
                                              (the same, as a multipart upload of parts of
                                               PART_SIZE bytes, the last one shorter)
          start-multipart-upload BUCKET KEY   (prints the new upload's id; nothing is uploaded)
          list-objects BUCKET PREFIX          (JSON [[key, size], ...] in key order, all pages)
          get-object BUCKET KEY               (the object's bytes on stdout)
          list-multipart-uploads BUCKET       (JSON [[key, upload_id], ...], all pages)
        An error is printed to stderr, exit 1.

crates/testkit runs both.
"""

import json
import logging
import os
import sys


def serve():
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        print("MISSING moto", flush=True)
        sys.exit(3)
    import urllib.request

    # Requests are logged by werkzeug at INFO: keep the log to what went wrong.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    _, port = server.get_host_and_port()
    endpoint = f"http://127.0.0.1:{port}"
    # The socket is bound and served by now; one request proves it answers (ListBuckets).
    with urllib.request.urlopen(endpoint + "/", timeout=30) as response:
        response.read()
    sys.stdout.write(f"READY {endpoint}\n")
    sys.stdout.flush()
    while sys.stdin.buffer.read(4096):
        pass
    os._exit(0)


def sigv4(method, url, region):
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    headers = json.load(sys.stdin)
    request = AWSRequest(method=method, url=url, headers=headers)
    request.context["timestamp"] = headers["x-amz-date"]
    credentials = Credentials(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"])
    auth = S3SigV4Auth(credentials, "s3", region)
    canonical = auth.canonical_request(request)
    sys.stdout.write(auth.signature(auth.string_to_sign(request, canonical), request))


def client(endpoint, command, args):
    import boto3
    from botocore.config import Config

    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )
    if command == "create-bucket" and len(args) == 1:
        s3.create_bucket(Bucket=args[0])
    elif command == "put-object" and len(args) == 2:
        s3.put_object(Bucket=args[0], Key=args[1], Body=sys.stdin.buffer.read())
    elif command == "put-object-multipart" and len(args) == 3:
        bucket, key, part_size = args[0], args[1], int(args[2])
        data = sys.stdin.buffer.read()
        upload = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        try:
            parts = []
            for number, start in enumerate(range(0, max(len(data), 1), part_size), start=1):
                body = data[start : start + part_size]
                etag = s3.upload_part(
                    Bucket=bucket, Key=key, UploadId=upload, PartNumber=number, Body=body
                )["ETag"]
                parts.append({"PartNumber": number, "ETag": etag})
            s3.complete_multipart_upload(
                Bucket=bucket, Key=key, UploadId=upload, MultipartUpload={"Parts": parts}
            )
        except Exception:
            # Leave no upload behind for the test to trip over.
            s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload)
            raise
    elif command == "start-multipart-upload" and len(args) == 2:
        upload = s3.create_multipart_upload(Bucket=args[0], Key=args[1])["UploadId"]
        sys.stdout.write(upload)
    elif command == "list-objects" and len(args) == 2:
        found = []
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=args[0], Prefix=args[1])
        for page in pages:
            found.extend([o["Key"], o["Size"]] for o in page.get("Contents", []))
        json.dump(found, sys.stdout)
    elif command == "get-object" and len(args) == 2:
        body = s3.get_object(Bucket=args[0], Key=args[1])["Body"].read()
        sys.stdout.buffer.write(body)
    elif command == "list-multipart-uploads" and len(args) == 1:
        found = []
        pages = s3.get_paginator("list_multipart_uploads").paginate(Bucket=args[0])
        for page in pages:
            found.extend([u["Key"], u["UploadId"]] for u in page.get("Uploads", []))
        json.dump(found, sys.stdout)
    else:
        print(f"s3.py: unknown command or wrong arguments: {command} {args}", file=sys.stderr)
        sys.exit(2)


def main():
    if sys.argv[1:] == ["serve"]:
        serve()
    elif len(sys.argv) == 5 and sys.argv[1] == "sigv4":
        sigv4(*sys.argv[2:])
    elif len(sys.argv) >= 3:
        try:
            client(sys.argv[1], sys.argv[2], sys.argv[3:])
        except Exception as e:  # noqa: BLE001 -- reported to the test, which fails
            print(f"s3.py: {type(e).__name__}: {e}", file=sys.stderr)
            sys.exit(1)
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
