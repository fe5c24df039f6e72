/*
 * json_api.h - calls to the AWS services that speak the JSON 1.1 protocol
 * (private to providers/aws/): the Price List Query API
 * (AWSPriceListService.*) and Service Quotas (ServiceQuotasV20190624.*).
 *
 * Wire format (the services' API references, "Common parameters" and
 * botocore's service models, metadata.protocol "json", jsonVersion "1.1"):
 * POST / to the service's endpoint (gpc_aws_service_endpoint) with
 *   Content-Type: application/x-amz-json-1.1
 *   X-Amz-Target: <targetPrefix>.<Operation>
 * and the operation's input as a JSON object (at least "{}").  The answer
 * is a JSON object.  An error is a non-2xx status whose body is
 *   {"__type": "[namespace#]Code", "message" or "Message": "..."}
 * (the code is the text after the last '#'); the request id is the
 * x-amzn-RequestId header.  Every attempt is signed anew with SigV4
 * (gpc_ec2_sign) for the service's signing name ("pricing",
 * "servicequotas") and the endpoint's signing region.
 *
 * The session (gpc_ec2) is EC2's: its credentials, HTTP client (connection
 * cache), clock offset and call counter are shared with the EC2 calls.
 *
 * Retries (as ec2.h, aws.md 3.3): a throttling code (gpc_ec2_code_is_throttle:
 * ThrottlingException, TooManyRequestsException, ...; also any code that
 * starts with "Throttling"), a 5xx, and a gateway's 429/502/503/504 without
 * a JSON error are retried with capped exponential backoff and full
 * jitter (6 attempts); transport failures too (every JSON 1.1 call gpuctl
 * makes only reads).  A clock-skew answer (RequestExpired, or
 * InvalidSignatureException whose message starts "Signature expired") is
 * answered once by re-signing with the offset the reply's Date header gives.
 *
 * Error mapping (gpc_aws_json_error_code): AccessDenied*, UnrecognizedClient*,
 * InvalidSignature*, IncompleteSignature*, MissingAuthenticationToken*,
 * ExpiredToken*, and EC2's auth family -> GPC_ERR_AUTH;
 * NoSuchResourceException -> GPC_ERR_NOT_FOUND; everything else
 * GPC_ERR_PROVIDER.  The message reads
 * "aws: TARGET (REGION): CODE: MESSAGE (request id ID)", with a hint for
 * AccessDenied (the IAM action, "pricing:GetProducts" for
 * "AWSPriceListService.GetProducts").  err->remote holds CODE, the HTTP
 * status, the request id and whether the retry rule wanted more.
 */
#ifndef GPUCTL_AWS_JSON_API_H
#define GPUCTL_AWS_JSON_API_H

#include <cjson/cJSON.h>

#include "aws/config.h"
#include "aws/ec2.h"
#include "gpuctl/error.h"

#define GPC_AWS_JSON_CONTENT_TYPE "application/x-amz-json-1.1"

/*
 * Call `target` (e.g. "AWSPriceListService.GetProducts",
 * "ServiceQuotasV20190624.GetServiceQuota") of service `svc`
 * (GPC_AWS_PRICING or GPC_AWS_SERVICE_QUOTAS) for `region` (the endpoint's
 * region: Service Quotas is regional; the Price List has its own fixed
 * endpoint and `region` only names the call in messages) with input
 * `body` (borrowed; NULL = "{}").  On success *out is the parsed answer
 * (caller frees with cJSON_Delete).  Errors as described above; also
 * GPC_ERR_USAGE for an invalid region or endpoint, GPC_ERR_PROVIDER for a
 * 2xx answer that is not a JSON object, GPC_ERR_INTERRUPTED, GPC_ERR_NOMEM.
 * *out is NULL after an error.
 */
int gpc_aws_json_call(gpc_ec2 *e, gpc_aws_service svc, const char *region, const char *target,
                      const cJSON *body, cJSON **out, gpc_error *err);

/* Classify a JSON 1.1 error code (the text after '#'; exposed for tests). */
gpc_code gpc_aws_json_error_code(const char *code);

/* 1 when a reply with this code should be retried (throttling). */
int gpc_aws_json_code_is_throttle(const char *code);

#endif /* GPUCTL_AWS_JSON_API_H */
