#!/bin/sh
# The compose stack's MinIO setup (idempotent, runs at every start): the app's bucket, and the
# app's own user whose policy covers that bucket only. The root credentials stay with this job
# and the server; docs-command never sees them.
set -eu
secret() { tr -d '\n' <"/run/secrets/$1"; }
export MC_CONFIG_DIR="${MC_CONFIG_DIR:-/tmp/.mc}"
bucket="${MINIO_BUCKET:?MINIO_BUCKET is required}"
app_user="$(secret minio_app_access_key)"
mc --quiet alias set root "${MINIO_URL:?MINIO_URL is required}" "$(secret minio_root_user)" "$(secret minio_root_password)" >/dev/null
mc --quiet mb --ignore-existing "root/$bucket"
policy="/tmp/docshare-app-policy.json"
cat >"$policy" <<JSON
{
  "Version": "2012-10-17",
  "Statement": [
    { "Effect": "Allow", "Action": ["s3:GetBucketLocation", "s3:ListBucket", "s3:ListBucketMultipartUploads"],
      "Resource": ["arn:aws:s3:::$bucket"] },
    { "Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
      "Resource": ["arn:aws:s3:::$bucket/*"] }
  ]
}
JSON
mc --quiet admin policy create root docshare-app "$policy" >/dev/null
# `user add` sets the secret again when the user exists: a rotated secret file takes effect here.
mc --quiet admin user add root "$app_user" "$(secret minio_app_secret_key)" >/dev/null
mc --quiet admin policy attach root docshare-app --user "$app_user" >/dev/null 2>&1 || true
mc --quiet admin policy entities root --user "$app_user" | grep -q docshare-app
echo "minio-init: bucket $bucket, user $app_user with policy docshare-app"
