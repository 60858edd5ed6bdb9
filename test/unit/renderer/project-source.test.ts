// How a project's source reads in the UI, now that the fields of other sources are empty strings
// (SPEC.md §2.1 types them strings), and for copies kept from versions that sent null.
import { describe, expect, it } from 'vitest';
import type { Project } from '../../../src/shared/api/projects.js';
import { describeSource } from '../../../src/renderer/src/views/projects/source.js';

type Source = Pick<Project, 'deploy_source' | 'repo_url' | 'git_host_repo' | 'branch' | 'image'>;
const empty: Source = { deploy_source: 'git', repo_url: '', git_host_repo: '', branch: '', image: '' };
const read = (source: Partial<Source>) => describeSource({ ...empty, ...source } as Project);

describe('the source of a project', () => {
  it('reads a repo_url with its branch, the empty git_host_repo aside', () => {
    expect(read({ repo_url: 'https://example.com/a.git', branch: 'main' })).toEqual({
      kind: 'Git',
      detail: 'https://example.com/a.git · main',
    });
  });

  it('reads a git_host_repo before a repo_url', () => {
    expect(read({ git_host_repo: 'acme/site', repo_url: 'https://x/y.git', branch: 'dev' }).detail).toBe(
      'acme/site · dev',
    );
  });

  it('reads an image, and no detail for an image that is empty', () => {
    expect(read({ deploy_source: 'image', image: 'nginx:1.27' })).toEqual({
      kind: 'Image',
      detail: 'nginx:1.27',
    });
    expect(read({ deploy_source: 'image' }).detail).toBeNull();
  });

  it('reads an upload, and fields that are null in an older copy', () => {
    expect(read({ deploy_source: 'upload' })).toEqual({ kind: 'Upload', detail: null });
    const old = {
      ...empty,
      repo_url: 'https://x/y.git',
      git_host_repo: null,
      branch: null,
    } as unknown as Source;
    expect(describeSource(old as Project)).toEqual({ kind: 'Git', detail: 'https://x/y.git' });
  });
});
