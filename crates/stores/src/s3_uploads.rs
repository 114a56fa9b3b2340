//! The multipart uploads open under a key prefix (S3's `ListMultipartUploads`), which
//! `object_store` does not offer.
//!
//! A writer learns an upload's id only from the answer to the request that starts it; a
//! process killed before writing that id down leaves an upload nobody can name. What the
//! process can write down first is where the upload will be, and this listing finds it from
//! there (see `Journal` and `S3Storage::abort_open_uploads`).
//!
//! The request is signed by `object_store`'s own SigV4 signer with the store's credential
//! provider, sent by an HTTP client built from the store's client options, to the same bucket
//! URL the store uses: the same endpoint, region, credentials and addressing style.

use std::io;
use std::time::Duration;

use object_store::aws::{AwsAuthorizer, AwsCredentialProvider};
use object_store::client::{
    ClientOptions, HttpConnector, HttpErrorKind, HttpRequestBody, ReqwestConnector,
};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::error::io_error;

/// Characters a query value keeps as they are (SigV4's unreserved set); every other byte is
/// percent-encoded, so that the query the server sees is the one that was signed.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Uploads asked for per page (S3's own maximum).
const PAGE: u32 = 1000;

/// An upload that was started and neither completed nor aborted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpenUpload {
    /// The object's key.
    pub(crate) key: String,
    /// The upload's id.
    pub(crate) upload_id: String,
}

/// Where the listing of one bucket's uploads is sent, and how it is signed.
#[derive(Debug, Clone)]
pub(crate) struct UploadLister {
    /// The bucket's URL, as the store addresses it (path-style `ENDPOINT/BUCKET`, or a
    /// virtual-hosted endpoint naming the bucket itself).
    bucket_url: String,
    region: String,
    credentials: AwsCredentialProvider,
    options: ClientOptions,
    /// How long one page may take.
    timeout: Duration,
}

/// The bucket's URL as `object_store`'s S3 client forms it from the same settings: an
/// endpoint given with virtual-hosted requests is the bucket's own URL; an endpoint with
/// path-style requests is followed by the bucket; no endpoint is AWS's regional one.
pub(crate) fn bucket_url(
    endpoint: Option<&str>,
    path_style: bool,
    region: &str,
    bucket: &str,
) -> String {
    match endpoint {
        Some(endpoint) if !path_style => endpoint.to_string(),
        Some(endpoint) => format!("{}/{bucket}", endpoint.trim_end_matches('/')),
        None => format!("https://s3.{region}.amazonaws.com/{bucket}"),
    }
}

/// One page of a listing.
#[derive(Debug, Default, PartialEq, Eq)]
struct Page {
    uploads: Vec<OpenUpload>,
    /// Where the next page starts, if the listing goes on: a key and an upload id.
    next: Option<(String, String)>,
}

impl UploadLister {
    /// A lister of the bucket at `bucket_url` ([`bucket_url`]), signing for `region` with
    /// `credentials` and connecting with `options`: the store's own. Each page may take
    /// `timeout`.
    pub(crate) fn new(
        bucket_url: String,
        region: String,
        credentials: AwsCredentialProvider,
        options: ClientOptions,
        timeout: Duration,
    ) -> UploadLister {
        UploadLister {
            bucket_url,
            region,
            credentials,
            options,
            timeout,
        }
    }

    /// Every upload open under `prefix` (keys that start with it), all pages.
    ///
    /// # Errors
    /// If a request fails or is refused, or an answer cannot be read.
    pub(crate) async fn list(&self, prefix: &str) -> io::Result<Vec<OpenUpload>> {
        let client = ReqwestConnector::default()
            .connect(&self.options)
            .map_err(|e| io_error(io::ErrorKind::Other, format!("no HTTP client: {e}")))?;
        let mut found = Vec::new();
        list_pages(prefix, &mut found, |marker| {
            let url = self.page_url(prefix, marker);
            let client = client.clone();
            let page = async move {
                let credential = self.credentials.get_credential().await.map_err(|e| {
                    io_error(
                        io::ErrorKind::PermissionDenied,
                        format!("no credentials: {e}"),
                    )
                })?;
                let mut request = http::Request::builder()
                    .method(http::Method::GET)
                    .uri(url.as_str())
                    .body(HttpRequestBody::empty())
                    .map_err(|e| io_error(io::ErrorKind::InvalidInput, format!("{url}: {e}")))?;
                AwsAuthorizer::new(&credential, "s3", &self.region)
                    .try_authorize(&mut request, None)
                    .map_err(|e| io_error(io::ErrorKind::Other, format!("cannot sign: {e}")))?;
                let response = client.execute(request).await.map_err(|e| {
                    let kind = match e.kind() {
                        HttpErrorKind::Connect => io::ErrorKind::ConnectionRefused,
                        HttpErrorKind::Timeout => io::ErrorKind::TimedOut,
                        _ => io::ErrorKind::Other,
                    };
                    io_error(kind, format!("{url}: {e}"))
                })?;
                let status = response.status();
                let body = response
                    .into_body()
                    .bytes()
                    .await
                    .map_err(|e| io_error(io::ErrorKind::Other, format!("{url}: {e}")))?;
                let text = String::from_utf8_lossy(&body);
                if !status.is_success() {
                    return Err(refusal(status.as_u16(), &text));
                }
                parse_page(&text).map_err(|e| {
                    io_error(
                        io::ErrorKind::InvalidData,
                        format!("ListMultipartUploads: an answer that is not a listing: {e}"),
                    )
                })
            };
            async move {
                tokio::time::timeout(self.timeout, page)
                    .await
                    .unwrap_or_else(|_| {
                        Err(io_error(
                            io::ErrorKind::TimedOut,
                            format!(
                                "ListMultipartUploads under {prefix}: no answer within {:.0} s",
                                self.timeout.as_secs_f64()
                            ),
                        ))
                    })
            }
        })
        .await?;
        Ok(found)
    }

    /// The URL of the page of the uploads under `prefix` that starts after `marker`.
    fn page_url(&self, prefix: &str, marker: Option<&(String, String)>) -> String {
        let mut url = self.bucket_url.clone();
        // The bucket of a virtual-hosted URL is its root path.
        if !url
            .split_once("://")
            .is_some_and(|(_, rest)| rest.contains('/'))
        {
            url.push('/');
        }
        let encode = |v: &str| utf8_percent_encode(v, QUERY_VALUE).to_string();
        url.push_str(&format!(
            "?uploads=&prefix={}&max-uploads={PAGE}",
            encode(prefix)
        ));
        if let Some((key, upload_id)) = marker {
            url.push_str(&format!(
                "&key-marker={}&upload-id-marker={}",
                encode(key),
                encode(upload_id)
            ));
        }
        url
    }
}

/// Follows the pages `fetch` returns (given where each starts: `None` for the first), adding
/// the uploads under `prefix` to `found`. A page that says more follow but would start the
/// next where it started itself is an error, not a loop.
async fn list_pages<F, Fut>(prefix: &str, found: &mut Vec<OpenUpload>, fetch: F) -> io::Result<()>
where
    F: Fn(Option<&(String, String)>) -> Fut,
    Fut: std::future::Future<Output = io::Result<Page>>,
{
    let mut marker: Option<(String, String)> = None;
    loop {
        let page = fetch(marker.as_ref()).await?;
        // The server filters by prefix; a key outside it is never taken for one inside.
        found.extend(
            page.uploads
                .into_iter()
                .filter(|u| u.key.starts_with(prefix)),
        );
        match page.next {
            None => return Ok(()),
            Some(next) if marker.as_ref() == Some(&next) => {
                return Err(io_error(
                    io::ErrorKind::InvalidData,
                    format!(
                        "ListMultipartUploads under {prefix}: the listing does not advance past \
                         key {} (upload {})",
                        next.0, next.1
                    ),
                ))
            }
            Some(next) => marker = Some(next),
        }
    }
}

/// A page of `ListMultipartUploadsResult`: its uploads, and where the next page starts when
/// `IsTruncated` says there is one (`NextKeyMarker` and `NextUploadIdMarker`, or the last
/// upload's key and id for a server that leaves them out).
fn parse_page(xml: &str) -> Result<Page, String> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| e.to_string())?;
    let root = doc.root_element();
    if root.tag_name().name() != "ListMultipartUploadsResult" {
        return Err(format!("the root element is <{}>", root.tag_name().name()));
    }
    let text = |parent: roxmltree::Node<'_, '_>, name: &str| -> Option<String> {
        parent
            .children()
            .find(|n| n.tag_name().name() == name)
            .map(|n| n.text().unwrap_or_default().to_string())
    };
    let mut uploads = Vec::new();
    for upload in root.children().filter(|n| n.tag_name().name() == "Upload") {
        match (text(upload, "Key"), text(upload, "UploadId")) {
            (Some(key), Some(upload_id)) if !upload_id.is_empty() => {
                uploads.push(OpenUpload { key, upload_id });
            }
            _ => return Err("an <Upload> without its <Key> or <UploadId>".to_string()),
        }
    }
    let truncated = text(root, "IsTruncated").is_some_and(|t| t.trim() == "true");
    let next = if truncated {
        let named = (
            text(root, "NextKeyMarker").filter(|k| !k.is_empty()),
            text(root, "NextUploadIdMarker").filter(|u| !u.is_empty()),
        );
        match (named, uploads.last()) {
            ((Some(key), Some(upload_id)), _) => Some((key, upload_id)),
            (_, Some(last)) => Some((last.key.clone(), last.upload_id.clone())),
            ((Some(key), None), None) => Some((key, String::new())),
            _ => return Err("truncated, with nowhere to go on from".to_string()),
        }
    } else {
        None
    };
    Ok(Page { uploads, next })
}

/// The error of a refused listing, of the kind its status says, with the store's code and
/// message.
fn refusal(status: u16, body: &str) -> io::Error {
    let field = |name: &str| {
        roxmltree::Document::parse(body).ok().and_then(|doc| {
            doc.root_element()
                .children()
                .find(|n| n.tag_name().name() == name)
                .and_then(|n| n.text().map(str::to_string))
        })
    };
    let code = field("Code").unwrap_or_default();
    let message = field("Message").unwrap_or_default();
    let kind = match (status, code.as_str()) {
        (404, _) => io::ErrorKind::NotFound,
        (401 | 403, _) => io::ErrorKind::PermissionDenied,
        _ => io::ErrorKind::Other,
    };
    io_error(
        kind,
        format!("ListMultipartUploads refused (HTTP {status}): {code} {message}")
            .trim_end()
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::sync::Mutex;

    /// A page as S3's API reference shows one (namespace, owner and initiator included).
    fn page_xml(uploads: &[(&str, &str)], next: Option<(&str, &str)>) -> String {
        let mut xml = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListMultipartUploadsResult \
             xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>bkt</Bucket>\
             <KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>",
        );
        if let Some((key, id)) = next {
            xml.push_str(&format!(
                "<NextKeyMarker>{key}</NextKeyMarker><NextUploadIdMarker>{id}</NextUploadIdMarker>"
            ));
        }
        xml.push_str(&format!(
            "<MaxUploads>2</MaxUploads><IsTruncated>{}</IsTruncated>",
            next.is_some()
        ));
        for (key, id) in uploads {
            xml.push_str(&format!(
                "<Upload><Key>{key}</Key><UploadId>{id}</UploadId><Initiator><ID>arn:x</ID>\
                 <DisplayName>u</DisplayName></Initiator><Owner><ID>o</ID></Owner>\
                 <StorageClass>STANDARD</StorageClass>\
                 <Initiated>2010-11-10T20:48:33.000Z</Initiated></Upload>"
            ));
        }
        xml.push_str("</ListMultipartUploadsResult>");
        xml
    }

    fn upload(key: &str, id: &str) -> OpenUpload {
        OpenUpload {
            key: key.to_string(),
            upload_id: id.to_string(),
        }
    }

    #[test]
    fn pages_are_read_with_their_escapes_and_markers() {
        let page = parse_page(&page_xml(
            &[("out/a&amp;b", "u1"), ("out/c", "u2")],
            Some(("out/c", "u2")),
        ))
        .expect("parses");
        assert_eq!(
            page.uploads,
            [upload("out/a&b", "u1"), upload("out/c", "u2")]
        );
        assert_eq!(page.next, Some(("out/c".to_string(), "u2".to_string())));
        let last = parse_page(&page_xml(&[], None)).expect("parses");
        assert_eq!(last, Page::default());
        // A server that says "truncated" without markers goes on after its last upload.
        let bare = page_xml(&[("out/d", "u4")], None).replace(
            "<IsTruncated>false</IsTruncated>",
            "<IsTruncated>true</IsTruncated>",
        );
        let page = parse_page(&bare).expect("parses");
        assert_eq!(page.next, Some(("out/d".to_string(), "u4".to_string())));
        for bad in [
            "<Error><Code>AccessDenied</Code></Error>",
            "not xml",
            "<ListMultipartUploadsResult><Upload><Key>k</Key></Upload></ListMultipartUploadsResult>",
        ] {
            assert!(parse_page(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_page_is_followed_from_where_the_last_one_ended() {
        let pages = Mutex::new(VecDeque::from([
            (
                None,
                page_xml(&[("out/a", "1"), ("out/a", "2")], Some(("out/a", "2"))),
            ),
            (
                Some(("out/a", "2")),
                // A key outside the prefix, however it got here, is left out.
                page_xml(&[("out/b", "3"), ("outside", "4")], Some(("outside", "4"))),
            ),
            (Some(("outside", "4")), page_xml(&[("out/c", "5")], None)),
        ]));
        let mut found = Vec::new();
        let fetch = |marker: Option<&(String, String)>| {
            let (expected, xml) = pages.lock().unwrap().pop_front().expect("asked once more");
            let expected = expected.map(|(k, u): (&str, &str)| (k.to_string(), u.to_string()));
            assert_eq!(marker.cloned(), expected);
            std::future::ready(parse_page(&xml).map_err(io::Error::other))
        };
        crate::runtime::block_on(list_pages("out/", &mut found, fetch))
            .unwrap()
            .expect("lists");
        assert!(pages.lock().unwrap().is_empty(), "every page read");
        assert_eq!(
            found,
            [
                upload("out/a", "1"),
                upload("out/a", "2"),
                upload("out/b", "3"),
                upload("out/c", "5")
            ]
        );

        // A server that keeps answering with the same page is an error, not a loop.
        let same = |_: Option<&(String, String)>| {
            std::future::ready(
                parse_page(&page_xml(&[("out/a", "1")], Some(("out/a", "1"))))
                    .map_err(io::Error::other),
            )
        };
        let err = crate::runtime::block_on(list_pages("out/", &mut Vec::new(), same))
            .unwrap()
            .expect_err("stops");
        assert!(err.to_string().contains("does not advance"), "{err}");
    }

    #[test]
    fn the_bucket_url_is_the_one_the_store_requests() {
        use object_store::aws::AmazonS3Builder;
        use object_store::signer::Signer;
        for (endpoint, path_style) in [
            (Some("http://127.0.0.1:9000"), true),
            (Some("http://127.0.0.1:9000/"), true),
            (Some("https://bkt.s3.eu-west-1.amazonaws.com"), false),
            (None, true),
        ] {
            let mut builder = AmazonS3Builder::new()
                .with_bucket_name("bkt")
                .with_region("eu-west-1")
                .with_access_key_id("k")
                .with_secret_access_key("s")
                .with_allow_http(true);
            if let Some(endpoint) = endpoint {
                builder = builder
                    .with_endpoint(endpoint)
                    .with_virtual_hosted_style_request(!path_style);
            }
            let store = builder.build().expect("builds");
            let signed = crate::runtime::block_on(store.signed_url(
                http::Method::GET,
                &object_store::path::Path::from("k"),
                std::time::Duration::from_secs(60),
            ))
            .unwrap()
            .expect("signs");
            let ours = bucket_url(endpoint, path_style, "eu-west-1", "bkt");
            assert!(
                signed.as_str().starts_with(&format!("{ours}/k?")),
                "{endpoint:?}: {signed} is not under {ours}"
            );
        }
    }

    #[test]
    fn query_values_are_encoded_as_signed() {
        let lister = UploadLister::new(
            "https://bkt.example.com".to_string(),
            "r".to_string(),
            std::sync::Arc::new(object_store::StaticCredentialProvider::new(
                object_store::aws::AwsCredential {
                    key_id: "k".to_string(),
                    secret_key: "s".to_string(),
                    token: None,
                },
            )),
            ClientOptions::new(),
            Duration::from_secs(1),
        );
        let marker = ("a b/+c".to_string(), "x=y".to_string());
        assert_eq!(
            lister.page_url("jobs/out 1/", Some(&marker)),
            "https://bkt.example.com/?uploads=&prefix=jobs%2Fout%201%2F&max-uploads=1000\
             &key-marker=a%20b%2F%2Bc&upload-id-marker=x%3Dy"
        );
    }

    #[test]
    fn refusals_say_what_the_store_said() {
        let err = refusal(
            403,
            "<Error><Code>AccessDenied</Code><Message>no</Message></Error>",
        );
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        assert!(err.to_string().contains("AccessDenied no"), "{err}");
        assert_eq!(refusal(404, "").kind(), io::ErrorKind::NotFound);
    }
}
